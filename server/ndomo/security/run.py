"""The shell runner behind the `bash` tool.

The command runs in its own session (process group) so that a timeout or a
cancellation can kill everything it started, grandchildren included. Output is read
incrementally and capped (head and tail kept) so a chatty command cannot flood
memory or the model's context.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from ndomo.schema import Schema
from ndomo.security import spawn

SHELL = "/bin/bash"
KILL_GRACE_S = 2.0  # between SIGTERM and SIGKILL
DRAIN_S = 0.5  # after the shell exits, how long background children may keep the output open
_CHUNK = 65536


class ShellResult(Schema):
    exit_code: int | None  # None when we killed it (timeout or cancel)
    output: str
    truncated_bytes: int
    timed_out: bool
    cancelled: bool
    duration_s: float
    background_killed: bool = False  # leftover children held the output open and were stopped

    def render(self) -> str:
        """Text for the model."""
        if self.timed_out:
            head = f"timed out after {self.duration_s:.1f}s; the command and its child processes were killed"
        elif self.cancelled:
            head = "cancelled; the command and its child processes were killed"
        elif self.exit_code is not None and self.exit_code < 0:
            try:
                name = signal.Signals(-self.exit_code).name
            except ValueError:
                name = f"signal {-self.exit_code}"
            head = f"killed by {name}"
        else:
            head = f"exit code: {self.exit_code}"
        lines = [head]
        if self.background_killed:
            lines.append("background processes still writing to the output were stopped")
        lines.append(self.output if self.output else "(no output)")
        return "\n".join(lines)


class _Capture:
    """Keeps the first and last bytes of a stream within a cap; counts what it drops."""

    def __init__(self, cap: int) -> None:
        self.head_cap = cap // 2
        self.tail_cap = cap - self.head_cap
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        room = self.head_cap - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail += data
            if len(self.tail) > self.tail_cap:
                del self.tail[: len(self.tail) - self.tail_cap]

    @property
    def dropped(self) -> int:
        return self.total - len(self.head) - len(self.tail)

    def text(self) -> str:
        head = self.head.decode("utf-8", errors="replace")
        tail = self.tail.decode("utf-8", errors="replace")
        if self.dropped:
            return f"{head}\n… truncated {self.dropped} bytes …\n{tail}"
        return head + tail


def _group_alive(pgid: int) -> bool:
    """Any live (non-zombie) process left in the group? Zombies may linger unreaped in containers."""
    if os.path.isdir("/proc/self"):
        return any(True for _ in _live_members(pgid))
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _live_members(pgid: int):
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                stat = f.read().decode("utf-8", "replace")
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()  # after "pid (comm) "
        if len(fields) > 2 and fields[2] == str(pgid) and fields[0] not in ("Z", "X"):
            yield int(entry.name)


async def _kill_group(proc: spawn.Child, grace_s: float) -> None:
    """SIGTERM the whole group, then SIGKILL whatever is left after the grace period."""
    pgid = proc.pid  # start_new_session: the shell leads its own group
    spawn.signal_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if proc.returncode is not None and not _group_alive(pgid):
            return
        await asyncio.sleep(0.05)
    spawn.signal_group(pgid, signal.SIGKILL)


async def run_shell(
    command: str,
    *,
    cwd: Path,
    timeout_s: float,
    output_cap: int,
    env: dict[str, str] | None = None,
    cancel: asyncio.Event | None = None,
    prefix: Sequence[str] = (),
    on_output: Callable[[bytes], Awaitable[None]] | None = None,
    pass_fds: Sequence[int] = (),
) -> ShellResult:
    """Run `command` with /bin/bash -c; stdout+stderr merged, stdin /dev/null.

    `env` adds to (and overrides) the server's environment. `prefix` goes before the
    shell's argv: the OS sandbox (`ndomo.security.sandbox`), which keeps the command in
    this process group so a timeout or a cancel still kills all of it. Setting `cancel` stops the
    command and returns a result with `cancelled=True`; cancelling the awaiting task
    kills the process group too and re-raises CancelledError. `on_output` sees every chunk
    as it is read (the live view); the result is capped as always. `pass_fds` reach the
    prefix (the inner relay of a command with `sandbox.destinations`).
    """
    if "\x00" in command:
        raise ValueError("command contains a NUL byte")
    if timeout_s <= 0:
        raise ValueError(f"timeout_s must be positive, got {timeout_s}")
    if output_cap < 1:
        raise ValueError(f"output_cap must be at least 1 byte, got {output_cap}")
    if not Path(cwd).is_dir():
        raise ValueError(f"working directory {cwd} does not exist or is not a directory")
    full_env = None if env is None else {**os.environ, **env}
    started = time.monotonic()
    proc = await spawn.start(
        [*prefix, SHELL, "-c", command], cwd=cwd, env=full_env, pass_fds=pass_fds
    )
    capture = _Capture(output_cap)
    timed_out = cancelled = background_killed = False

    async def pump() -> None:
        assert proc.stdout is not None
        while chunk := await proc.stdout.read(_CHUNK):
            capture.feed(chunk)
            if on_output is not None:
                await on_output(chunk)

    async def finish() -> None:
        nonlocal background_killed
        reader = asyncio.ensure_future(pump())
        watcher = asyncio.ensure_future(proc.wait())  # the exit, whoever holds the pipe
        try:
            await asyncio.wait({reader, watcher}, return_when=asyncio.FIRST_COMPLETED)
            if reader.done():
                reader.result()
                await proc.wait()
                return
            try:
                await asyncio.wait_for(asyncio.shield(reader), DRAIN_S)
            except TimeoutError:
                background_killed = True
                await _kill_group(proc, KILL_GRACE_S)
                with contextlib.suppress(asyncio.TimeoutError):  # a child that left the group
                    await asyncio.wait_for(asyncio.shield(reader), KILL_GRACE_S)
        finally:
            for task in (reader, watcher):
                if not task.done():
                    task.cancel()
                    with contextlib.suppress(BaseException):
                        await task

    work = asyncio.ensure_future(finish())
    waiters: set[asyncio.Future] = {work}
    cancel_wait = asyncio.ensure_future(cancel.wait()) if cancel is not None else None
    if cancel_wait is not None:
        waiters.add(cancel_wait)
    try:
        done, _ = await asyncio.wait(
            waiters, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED
        )
        if work not in done:
            timed_out = cancel_wait is None or cancel_wait not in done
            cancelled = not timed_out
            await _stop(proc, work)
        else:
            work.result()
    except asyncio.CancelledError:
        await asyncio.shield(_stop(proc, work))
        raise
    finally:
        if cancel_wait is not None:
            cancel_wait.cancel()
        _release_pipe(proc)
    killed = timed_out or cancelled
    return ShellResult(
        exit_code=None if killed else proc.returncode,
        output=capture.text(),
        truncated_bytes=capture.dropped,
        timed_out=timed_out,
        cancelled=cancelled,
        duration_s=round(time.monotonic() - started, 3),
        background_killed=background_killed and not killed,
    )


def _release_pipe(proc: spawn.Child) -> None:
    """A child that escaped the group (setsid) may still hold the pipe; stop listening to it."""
    if proc.stdout is not None and not proc.stdout.at_eof():
        proc.close_output()


async def _stop(proc: spawn.Child, work: asyncio.Future) -> None:
    """Kill the group, then give the reader a moment to collect what was already written."""
    try:
        await _kill_group(proc, KILL_GRACE_S)
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.shield(work), KILL_GRACE_S)
    finally:
        if not work.done():
            work.cancel()
            with contextlib.suppress(BaseException):
                await work
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(proc.wait(), 1.0)
