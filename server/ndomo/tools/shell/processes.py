"""Long-running processes for `serve`: started in their own process group, output kept in
a ring buffer, stopped by group on request, at session end or when the app closes."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from ndomo.listeners import Listeners
from ndomo.schema import Schema
from ndomo.security import spawn
from ndomo.security.run import KILL_GRACE_S, SHELL, _kill_group

RING_LINES = 200
RING_LINE_CHARS = 2000
HOST = "127.0.0.1"


def free_port() -> int:
    """A port the OS says is free now (a tiny race with other binders is accepted)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


async def port_open(port: int) -> bool:
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(HOST, port), 0.5)
    except (TimeoutError, OSError):
        return False
    writer.close()
    with contextlib.suppress(Exception):
        await writer.wait_closed()
    return True


class ServedInfo(Schema):
    name: str
    kind: str  # "command" or "static"
    command: str
    port: int
    url: str
    pid: int
    running: bool
    exit_code: int | None
    uptime_s: float
    recent_output: list[str]


@dataclass
class Served:
    name: str
    kind: str
    command: str
    port: int
    proc: spawn.Child
    started: float = field(default_factory=time.monotonic)
    lines: deque = field(default_factory=lambda: deque(maxlen=RING_LINES))
    pump: asyncio.Task | None = None
    on_stop: Callable[[], Awaitable[list[str]]] | None = None  # the sandbox's after-run check
    # told each chunk read, `async (bytes) -> None` (a live view)
    listeners: Listeners[[bytes]] = field(default_factory=lambda: Listeners("served output"))

    @property
    def running(self) -> bool:
        return self.proc.returncode is None

    def info(self, tail: int = 20) -> ServedInfo:
        return ServedInfo(
            name=self.name,
            kind=self.kind,
            command=self.command,
            port=self.port,
            url=f"http://{HOST}:{self.port}/",
            pid=self.proc.pid,
            running=self.running,
            exit_code=self.proc.returncode,
            uptime_s=round(time.monotonic() - self.started, 1),
            recent_output=list(self.lines)[-tail:] if tail else [],
        )


class ServeError(Exception):
    pass


class ServeManager:
    """Per-app registry of served processes, keyed by session id then name."""

    def __init__(self) -> None:
        self.sessions: dict[str, dict[str, Served]] = {}

    def of(self, session_id: str) -> dict[str, Served]:
        return self.sessions.setdefault(session_id, {})

    async def start(
        self,
        session_id: str,
        name: str,
        kind: str,
        argv: list[str],
        command: str,
        port: int,
        cwd: Path,
        env: dict[str, str] | None = None,
        prefix: list[str] | None = None,
        on_stop: Callable[[], Awaitable[list[str]]] | None = None,
        listener=None,
        pass_fds: tuple[int, ...] = (),
    ) -> Served:
        """Start `argv` (after the sandbox `prefix`) in its own process group; `pass_fds`
        are inherited (the host end of a loopback relay)."""
        table = self.of(session_id)
        old = table.get(name)
        if old is not None and old.running:
            raise ServeError(
                f"'{name}' is already running on port {old.port}; stop it first or pick another name"
            )
        table.pop(name, None)
        proc = await spawn.start(
            [*(prefix or []), *argv], cwd=cwd, env={**os.environ, **(env or {})}, pass_fds=pass_fds
        )
        served = Served(
            name=name, kind=kind, command=command, port=port, proc=proc, on_stop=on_stop
        )
        if listener is not None:
            served.listeners.add(listener)
        served.pump = asyncio.ensure_future(self._pump(served))
        table[name] = served
        return served

    @staticmethod
    async def _pump(served: Served) -> None:
        stream = served.proc.stdout
        assert stream is not None
        while True:
            try:
                line = await stream.readline()
            except ValueError:  # a line longer than the stream limit
                line = await stream.read(65536)
            if not line:
                break
            await served.listeners.notify(line)
            served.lines.append(line.decode("utf-8", "replace").rstrip("\n")[:RING_LINE_CHARS])
        with contextlib.suppress(Exception):
            await served.proc.wait()

    async def wait_ready(self, served: Served, wait_s: float) -> bool:
        """True once the port accepts connections; False if it exited or the wait ran out."""
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            if not served.running:
                return False
            if await port_open(served.port):
                return True
            await asyncio.sleep(0.1)
        return False

    async def stop(self, session_id: str, name: str) -> tuple[Served, list[str]]:
        """Stop one; also returns the sandbox's notes (control files it had to undo)."""
        served = self.of(session_id).pop(name, None)
        if served is None:
            known = ", ".join(sorted(self.of(session_id))) or "none"
            raise ServeError(f"nothing named '{name}' is served in this session; running: {known}")
        return served, await self._stop(served)

    @staticmethod
    async def _stop(served: Served) -> list[str]:
        await _kill_group(served.proc, KILL_GRACE_S)  # leftovers too
        if served.running:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(served.proc.wait(), KILL_GRACE_S + 1)
        if served.pump is not None and not served.pump.done():
            served.pump.cancel()
            with contextlib.suppress(BaseException):
                await served.pump
        return await served.on_stop() if served.on_stop is not None else []

    async def stop_session(self, session_id: str) -> int:
        table = self.sessions.pop(session_id, {})
        await asyncio.gather(*(self._stop(s) for s in table.values()), return_exceptions=True)
        return len(table)

    async def aclose(self) -> None:
        for sid in list(self.sessions):
            await self.stop_session(sid)


def shell_argv(command: str) -> list[str]:
    return [SHELL, "-c", command]
