"""Start a child process without holding the event loop.

`asyncio.create_subprocess_exec` forks and execs on the loop's thread, and on Python
3.11 then starts a thread per child to wait for it and waits for that thread to run:
each `bash` and `serve` held the loop 1-4 ms while the editor's messages and the
model's stream queued behind it (docs/performance.md, Stop 37). Here the fork and exec
run on a worker thread; the loop only reads the child's output pipe and learns of its
exit from a pidfd (Linux 5.3+; elsewhere it polls every 50 ms).

Every child leads its own process group (a new session), stdin /dev/null, stdout and
stderr one pipe. `Child` offers what the shell runner and `serve` use of asyncio's
`Process`: `pid`, `returncode`, `stdout` (a `StreamReader`), `wait()`, `kill()`,
`communicate()`. Unlike asyncio's, `wait()` returns when the process exits, not when its
output pipe closes too (a background grandchild may hold it open), and `kill()` ends the
child's whole group.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

_LIMIT = 2**16  # a StreamReader's line limit, as asyncio's subprocess streams
_POLL_S = 0.05


class Child:
    """A started process; its exit is noticed on the loop without a thread per child."""

    def __init__(self, popen: subprocess.Popen[bytes], loop: asyncio.AbstractEventLoop) -> None:
        self._popen = popen
        self._loop = loop
        self.pid = popen.pid
        self.stdout: asyncio.StreamReader | None = None
        self._transport: asyncio.ReadTransport | None = None
        self._exited: asyncio.Future[int] = loop.create_future()
        self._pidfd: int | None = None
        self._poll: asyncio.TimerHandle | None = None

    @property
    def returncode(self) -> int | None:
        """The exit status once the process has been reaped (negative: killed by that signal)."""
        return self._popen.returncode

    async def _attach(self) -> None:
        self.stdout = asyncio.StreamReader(limit=_LIMIT, loop=self._loop)
        protocol = asyncio.StreamReaderProtocol(self.stdout, loop=self._loop)
        self._transport, _ = await self._loop.connect_read_pipe(
            lambda: protocol, self._popen.stdout
        )
        try:
            self._pidfd = os.pidfd_open(self.pid)
        except (AttributeError, OSError):  # not Linux 5.3+: poll instead
            self._poll = self._loop.call_later(_POLL_S, self._check)
        else:
            self._loop.add_reader(self._pidfd, self._check)
        self._check()  # it may have exited already

    def _check(self) -> None:
        if self._exited.done():
            return
        code = self._popen.poll()  # reaps it (waitpid WNOHANG) once it has exited
        if code is None:
            if self._pidfd is None:
                self._poll = self._loop.call_later(_POLL_S, self._check)
            return
        self._unwatch()
        self._exited.set_result(code)

    def _unwatch(self) -> None:
        if self._pidfd is not None:
            self._loop.remove_reader(self._pidfd)
            os.close(self._pidfd)
            self._pidfd = None
        if self._poll is not None:
            self._poll.cancel()
            self._poll = None

    async def wait(self) -> int:
        """The exit status, once the process has exited."""
        return await asyncio.shield(self._exited)

    def kill(self) -> None:
        """SIGKILL the child's group (it leads it). Only while the child is not reaped: until
        then its pid, the group's id, cannot have been given to another process."""
        if self.returncode is None:
            signal_group(self.pid, signal.SIGKILL)

    async def communicate(self) -> bytes:
        """All of stdout (until the pipe closes), then the exit."""
        out = await self.stdout.read() if self.stdout is not None else b""
        await self.wait()
        return out

    def close_output(self) -> None:
        """Stop reading stdout: a child that escaped the group may hold the pipe open."""
        if self._transport is not None and not self._transport.is_closing():
            self._transport.close()

    def __del__(self) -> None:  # a loop gone before the exit: the pidfd is not leaked
        if self._pidfd is not None:
            with contextlib.suppress(OSError):
                os.close(self._pidfd)


async def start(
    argv: Sequence[str],
    *,
    cwd: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    pass_fds: Sequence[int] = (),
) -> Child:
    """Start `argv` on a worker thread. A cancel waits for the start and then kills what
    started (its whole group), so no child is left running that nobody watches. `OSError`
    (no such program, bad folder) as `Popen`'s."""
    loop = asyncio.get_running_loop()
    job = asyncio.ensure_future(
        asyncio.to_thread(
            subprocess.Popen,
            list(argv),
            cwd=cwd,
            env=None if env is None else dict(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            pass_fds=tuple(pass_fds),
        )
    )
    try:
        popen = await asyncio.shield(job)
    except asyncio.CancelledError:
        with contextlib.suppress(Exception):
            await _abandon(await job)
        raise
    child = Child(popen, loop)
    try:
        await child._attach()
    except BaseException:
        await _abandon(popen)
        child._unwatch()
        raise
    return child


def signal_group(pgid: int, sig: int) -> None:
    """Signal a whole process group; one already gone (or not ours) is no error."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def _abandon(popen: subprocess.Popen[bytes]) -> None:
    """Kill a child nobody will watch, and reap it (on a thread: SIGKILL ends it at once)."""
    signal_group(popen.pid, signal.SIGKILL)
    with contextlib.suppress(Exception):
        await asyncio.to_thread(popen.wait)
    if popen.stdout is not None:
        popen.stdout.close()
