"""Loopback relays between the host and a sandbox's own network namespace.

A served process gets no network unless approved, yet its port must stay reachable by
`check_page` and the user; a sandboxed browser must reach that port and nothing else.
bubblewrap's `--unshare-net` gives each its own loopback, and a relay joins exactly one
port across: sockets passed as file descriptors cross network namespaces, nothing else
does. The half inside the sandbox is relay_inner.py; this is the host's half.
"""

from __future__ import annotations

import asyncio
import contextlib
import shlex
import socket
import sys
from pathlib import Path

from ndomo.security.run import SHELL

HOST = "127.0.0.1"
_INNER = (Path(__file__).with_name("relay_inner.py")).read_text(encoding="utf-8")


def inner_argv(mode: str, fd: int, port: int) -> list[str]:
    """The inner half's command line; `-I`: nothing from the workspace or the environment
    changes what the interpreter imports."""
    return [sys.executable, "-I", "-c", _INNER, mode, str(fd), str(port)]


def host_port(port: int) -> socket.socket:
    """127.0.0.1:port bound on the host and not yet listening (connections are refused until
    the served process is up), inheritable by the sandbox's relay."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((HOST, port))
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def served_argv(argv: list[str], fd: int, port: int) -> list[str]:
    """bash starts the relay in the background, drops its own copy of the host socket, then
    becomes the served command (same process group, same sandbox)."""
    script = f'{shlex.join(inner_argv("serve", fd, port))} & exec {fd}>&-; exec "$@"'
    return [SHELL, "-c", script, "ndomo-serve", *argv]


class Broker:
    """The host's side of an `ask` relay: for each request from inside, a socket connected
    to 127.0.0.1:port on the host, passed back as a file descriptor; nothing else."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.ours, self.theirs = socket.socketpair()
        self.theirs.set_inheritable(True)
        self.ours.setblocking(False)
        self._task: asyncio.Task | None = None

    def start(self) -> None:
        self._task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                data = await loop.sock_recv(self.ours, 64)
            except OSError:
                return
            if not data:
                return
            for _ in data:
                await self._answer(loop)

    async def _answer(self, loop: asyncio.AbstractEventLoop) -> None:
        out = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        out.setblocking(False)
        try:
            await asyncio.wait_for(loop.sock_connect(out, (HOST, self.port)), 5)
            await self._send_fd(loop, out.fileno())
        except (OSError, TimeoutError):
            with contextlib.suppress(OSError):
                await loop.sock_sendall(self.ours, b"x")
        finally:
            out.close()

    async def _send_fd(self, loop: asyncio.AbstractEventLoop, fd: int) -> None:
        """Passes `fd` on the loop's own thread: a send still running in a worker thread when
        the relay is cancelled would pass whatever descriptor reuses `out`'s number after
        `out` closes — a host file or socket handed into the sandbox."""
        while True:
            try:
                socket.send_fds(self.ours, [b"c"], [fd])
                return
            except BlockingIOError:
                ready: asyncio.Future[None] = loop.create_future()
                loop.add_writer(self.ours, _settle, ready)
                try:
                    await ready
                finally:
                    loop.remove_writer(self.ours)

    def release(self) -> None:
        """After the sandbox started: only it holds its end now."""
        self.theirs.close()

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task
        self.ours.close()
        self.theirs.close()


def _settle(ready: asyncio.Future[None]) -> None:
    if not ready.done():
        ready.set_result(None)
