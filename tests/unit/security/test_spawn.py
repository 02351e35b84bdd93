"""ndomo.security.spawn: children started off the event loop's thread, watched without a
thread each, and never left running unwatched (real processes)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import threading
import time

import pytest

from ndomo.security import spawn
from ndomo.security.run import run_shell
from ndomo.tools.shell.processes import ServeManager, free_port, shell_argv
from tests.unit.tools_shell.conftest import alive as running  # not a zombie either


def _alive(pid: int) -> bool:
    """Running, or a zombie nobody reaped (both are a leak)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_a_bash_command_starts_off_the_event_loops_thread(tmp_path, popen_threads):
    # asyncio's create_subprocess_exec forked on the loop and, on 3.11, started a thread per
    # child and waited for it to run: 1-4 ms with the editor's messages queued behind it.
    result = await run_shell("echo hi", cwd=tmp_path, timeout_s=10, output_cap=1000)
    assert result.exit_code == 0 and result.output == "hi\n"
    assert popen_threads and threading.main_thread() not in popen_threads


async def test_a_served_process_starts_off_the_event_loops_thread(tmp_path, popen_threads):
    manager = ServeManager()
    port = free_port()
    served = await manager.start(
        "s", "web", "command", shell_argv("echo up; sleep 30"), "sleep", port, tmp_path
    )
    try:
        assert popen_threads and threading.main_thread() not in popen_threads
        for _ in range(100):
            if served.lines:
                break
            await asyncio.sleep(0.02)
        assert list(served.lines) == ["up"] and served.running
    finally:
        await manager.aclose()
    assert not served.running and not _alive(served.proc.pid)


async def test_the_exit_is_seen_while_a_background_child_holds_the_output(tmp_path):
    # asyncio's Process.wait() waits for the pipe to close as well; the shell runner needs
    # the shell's own exit to start its drain timer.
    child = await spawn.start(["/bin/bash", "-c", "sleep 30 & echo started"], cwd=tmp_path)
    try:
        assert child.stdout is not None
        assert await asyncio.wait_for(child.stdout.readline(), 10) == b"started\n"
        assert await asyncio.wait_for(child.wait(), 10) == 0
        assert child.returncode == 0 and not child.stdout.at_eof()
    finally:
        os.killpg(child.pid, signal.SIGKILL)
        child.close_output()


async def test_a_killed_child_takes_its_group_and_is_reaped(tmp_path):
    child = await spawn.start(["/bin/bash", "-c", "sleep 30 & echo $!; exec sleep 30"])
    assert child.stdout is not None
    grandchild = int(await asyncio.wait_for(child.stdout.readline(), 10))
    assert child.returncode is None
    child.kill()
    assert await asyncio.wait_for(child.wait(), 10) == -signal.SIGKILL
    assert not _alive(child.pid)  # reaped: no zombie left behind
    for _ in range(100):  # the background sleep was in the group
        if not running(grandchild):
            break
        await asyncio.sleep(0.02)
    assert not running(grandchild)
    child.kill()  # an ended child: nothing to signal, no error


async def test_without_pidfd_the_exit_is_polled(tmp_path, monkeypatch):
    # Kernels before 5.3 (and other systems) have no pidfd_open.
    def missing(pid, flags=0):
        raise OSError(38, "Function not implemented")

    monkeypatch.setattr(os, "pidfd_open", missing)
    out = await asyncio.wait_for(
        (await spawn.start(["/bin/bash", "-c", "echo polled; exit 3"])).communicate(), 10
    )
    assert out == b"polled\n"


async def test_a_cancel_during_the_start_kills_what_started(tmp_path, monkeypatch):
    # The start runs on a thread the cancel cannot stop: the process it makes must not be
    # left running with nobody watching it (nor its group).
    pids: list[int] = []
    real = subprocess.Popen.__init__

    def slow(self, *args, **kw):
        real(self, *args, **kw)
        pids.append(self.pid)
        time.sleep(0.5)  # the cancel lands while the worker thread still starts it

    monkeypatch.setattr(subprocess.Popen, "__init__", slow)
    marker = tmp_path / "ran"
    task = asyncio.ensure_future(
        spawn.start(["/bin/bash", "-c", f"sleep 2; touch {marker}"], cwd=tmp_path)
    )
    await asyncio.sleep(0.2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert len(pids) == 1 and not _alive(pids[0])
    await asyncio.sleep(2.5)
    assert not marker.exists()


async def test_a_missing_program_is_the_error_popen_gives(tmp_path):
    with pytest.raises(FileNotFoundError):
        await spawn.start([str(tmp_path / "no-such-program")])
