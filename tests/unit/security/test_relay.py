"""The host's half of an `ask` relay (security/relay.py Broker), with real sockets.

The inside asks by writing a byte on its end of the socket pair; the broker answers with a
socket connected to 127.0.0.1:port on the host, passed as a file descriptor."""

from __future__ import annotations

import asyncio
import os
import socket
import time

import pytest

from ndomo.security.relay import HOST, Broker


@pytest.fixture
def listener():
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.bind((HOST, 0))
    srv.listen(4)
    yield srv
    srv.close()


async def _ask(broker: Broker) -> socket.socket:
    """What relay_inner does: one byte asks, the answer carries the descriptor."""
    loop = asyncio.get_running_loop()
    broker.theirs.sendall(b"r")
    msg, fds, _flags, _addr = await loop.run_in_executor(
        None, socket.recv_fds, broker.theirs, 16, 1
    )
    assert msg == b"c" and len(fds) == 1, (msg, fds)
    return socket.socket(fileno=fds[0])


async def test_an_answer_is_a_socket_connected_to_the_host_port(listener) -> None:
    broker = Broker(listener.getsockname()[1])
    broker.start()
    try:
        inside = await _ask(broker)
        with inside:
            conn, _ = await asyncio.get_running_loop().run_in_executor(None, listener.accept)
            with conn:
                inside.setblocking(True)
                inside.sendall(b"ping")
                assert conn.recv(4) == b"ping"
    finally:
        await broker.aclose()


async def test_a_relay_closed_mid_answer_never_passes_another_descriptor(
    listener, monkeypatch
) -> None:
    """A turn cancelled while the broker passes a socket: the descriptor number it passes
    must still be that socket when it is sent. Passed from a worker thread, the cancel closed
    the socket first and the send passed whatever reused its number (or nothing)."""
    seen: list[tuple[int, int | None]] = []
    real = socket.send_fds

    def slow_send(sock, buffers, fds, *args):
        before = os.fstat(fds[0]).st_ino
        time.sleep(0.3)  # the window a cancel falls into
        try:
            after: int | None = os.fstat(fds[0]).st_ino
        except OSError:
            after = None
        seen.append((before, after))
        return real(sock, buffers, fds, *args)

    monkeypatch.setattr(socket, "send_fds", slow_send)
    broker = Broker(listener.getsockname()[1])
    broker.start()
    broker.theirs.sendall(b"r")
    await asyncio.sleep(0.1)  # the broker is passing the socket now
    await broker.aclose()  # the turn ends while the answer is on its way
    await asyncio.sleep(0.5)  # a send left in a thread finishes now
    assert seen, "the broker never answered"
    before, after = seen[0]
    assert after == before, f"the descriptor passed was closed or reused mid-send: {seen}"
