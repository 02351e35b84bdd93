"""The server reads its stdin on the event loop (no thread hop per header line and body in
front of every request); where the loop cannot watch stdin, pygls's threaded reader."""

from __future__ import annotations

import io
import os
import socket
import sys

from pygls.io_ import StdinAsyncReader

from ndomo.lsp.process import Life, _LoopStdin


class _Server:
    thread_pool = None


def _file(fd: int, mode: str):
    return io.open(fd, mode, buffering=0, closefd=False)  # noqa: UP020 - fd wrapper, no close


async def test_a_pipe_is_read_by_the_loop_with_file_like_ends(monkeypatch):
    r, w = os.pipe()
    out_r, out_w = os.pipe()
    try:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BufferedReader(_file(r, "rb"))))
        monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(io.BufferedWriter(_file(out_w, "wb"))))
        reader = await Life(_Server())._stdin()  # type: ignore[arg-type]
        assert isinstance(reader, _LoopStdin)
        os.write(w, b"Content-Length: 5\r\n\r\nhel")
        os.close(w)
        w = -1
        assert await reader.readline() == b"Content-Length: 5\r\n"
        assert await reader.readline() == b"\r\n"
        assert await reader.readexactly(5) == b"hel"  # cut short: short, not an exception
        assert await reader.readline() == b""  # EOF
    finally:
        for fd in (r, w, out_r, out_w):
            if fd >= 0:
                os.close(fd)


async def test_stdin_and_stdout_on_one_socket_keep_the_threaded_reader(monkeypatch):
    a, b = socket.socketpair()
    try:
        f_in = a.makefile("rb", buffering=0)
        f_out = a.makefile("wb", buffering=0)
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BufferedReader(f_in)))
        monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(io.BufferedWriter(f_out)))
        reader = await Life(_Server())._stdin()  # type: ignore[arg-type]
        assert isinstance(reader, StdinAsyncReader)  # non-blocking mode would break writes
        assert os.get_blocking(a.fileno())
    finally:
        a.close()
        b.close()


async def test_a_regular_file_keeps_the_threaded_reader(monkeypatch, tmp_path):
    path = tmp_path / "in"
    path.write_bytes(b"")
    out_r, out_w = os.pipe()
    try:
        with path.open("rb") as f:
            monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BufferedReader(f)))
            monkeypatch.setattr(
                sys, "stdout", io.TextIOWrapper(io.BufferedWriter(_file(out_w, "wb")))
            )
            reader = await Life(_Server())._stdin()  # type: ignore[arg-type]
            assert isinstance(reader, StdinAsyncReader)
    finally:
        os.close(out_r)
        os.close(out_w)
