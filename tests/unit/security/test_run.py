"""Shell runner: exit codes, output cap, and killing the whole process tree."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from ndomo.security.run import ShellResult, run_shell

# a grandchild: shell -> bash -> sleep, whose pid lands in a file
GRANDCHILD = "bash -c 'sleep 300 & echo $! > {pidfile}; wait'; echo unreachable"


def _dead(pid: int) -> bool:
    """Gone, or a zombie nobody reaped yet (containers often lack a reaping init)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state in ("Z", "X")


async def _wait_for(predicate, what: str, limit_s: float = 10.0) -> None:
    """Bounded polling for something that happens asynchronously (not a timing assertion)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit_s
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        await asyncio.sleep(0.05)


async def _pid_from(pidfile: Path) -> int:
    await _wait_for(lambda: pidfile.exists() and pidfile.read_text().strip() != "", "the pid file")
    return int(pidfile.read_text())


async def test_exit_code_and_merged_output(tmp_path: Path) -> None:
    r = await run_shell(
        "echo out; echo err >&2; exit 3", cwd=tmp_path, timeout_s=30, output_cap=1000
    )
    assert r.exit_code == 3
    assert r.output == "out\nerr\n"
    assert (r.timed_out, r.cancelled, r.truncated_bytes) == (False, False, 0)
    assert r.render().splitlines()[0] == "exit code: 3"
    ok = await run_shell("pwd", cwd=tmp_path, timeout_s=30, output_cap=1000)
    assert ok.exit_code == 0 and ok.output.strip() == str(tmp_path)


async def test_output_cap_keeps_head_and_tail(tmp_path: Path) -> None:
    cmd = "for i in $(seq 1 20000); do echo line$i; done"
    r = await run_shell(cmd, cwd=tmp_path, timeout_s=60, output_cap=2000)
    total = sum(len(f"line{i}\n") for i in range(1, 20001))
    assert r.truncated_bytes == total - 2000
    assert f"… truncated {total - 2000} bytes …" in r.output
    assert r.output.startswith("line1\nline2\n")
    assert r.output.endswith("line19999\nline20000\n")
    assert "line10000\n" not in r.output
    assert f"truncated {total - 2000} bytes" in r.render()


async def test_small_output_not_truncated(tmp_path: Path) -> None:
    r = await run_shell("printf abc", cwd=tmp_path, timeout_s=30, output_cap=3)
    assert r.output == "abc" and r.truncated_bytes == 0


async def test_timeout_kills_grandchildren(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    r = await run_shell(
        GRANDCHILD.format(pidfile=pidfile), cwd=tmp_path, timeout_s=1.0, output_cap=1000
    )
    assert r.timed_out and not r.cancelled
    assert r.exit_code is None
    assert "unreachable" not in r.output
    assert r.render().startswith("timed out after")
    pid = int(pidfile.read_text())
    await _wait_for(lambda: _dead(pid), f"grandchild {pid} to die")


async def test_task_cancellation_kills_tree_and_reraises(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    task = asyncio.create_task(
        run_shell(GRANDCHILD.format(pidfile=pidfile), cwd=tmp_path, timeout_s=300, output_cap=1000)
    )
    pid = await _pid_from(pidfile)
    assert not _dead(pid)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await _wait_for(lambda: _dead(pid), f"grandchild {pid} to die")


async def test_cancel_event_returns_result(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    stop = asyncio.Event()
    task = asyncio.create_task(
        run_shell(
            "echo begun; " + GRANDCHILD.format(pidfile=pidfile),
            cwd=tmp_path,
            timeout_s=300,
            output_cap=1000,
            cancel=stop,
        )
    )
    pid = await _pid_from(pidfile)
    stop.set()
    r = await task
    assert r.cancelled and not r.timed_out and r.exit_code is None
    assert "begun" in r.output
    assert r.render().startswith("cancelled")
    await _wait_for(lambda: _dead(pid), f"grandchild {pid} to die")


async def test_background_child_holding_output_does_not_hang(tmp_path: Path) -> None:
    r = await run_shell(
        "sleep 300 & echo $! > pid; echo started", cwd=tmp_path, timeout_s=60, output_cap=1000
    )
    assert not r.timed_out
    assert r.exit_code == 0 and r.output == "started\n"
    assert r.background_killed
    pid = int((tmp_path / "pid").read_text())
    await _wait_for(lambda: _dead(pid), f"background child {pid} to die")


async def test_stdin_is_devnull_and_env_merges(tmp_path: Path) -> None:
    r = await run_shell(
        'cat; echo "[$NDOMO_T]"; test -n "$PATH" && echo path-kept',
        cwd=tmp_path,
        timeout_s=30,
        output_cap=1000,
        env={"NDOMO_T": "v"},
    )
    assert not r.timed_out
    assert r.output == "[v]\npath-kept\n"


async def test_killed_by_signal_is_reported(tmp_path: Path) -> None:
    r = await run_shell("kill -KILL $$", cwd=tmp_path, timeout_s=30, output_cap=1000)
    assert r.exit_code == -9
    assert r.render().startswith("killed by SIGKILL")


async def test_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="does not exist"):
        await run_shell("ls", cwd=tmp_path / "nope", timeout_s=5, output_cap=100)
    with pytest.raises(ValueError, match="timeout_s"):
        await run_shell("ls", cwd=tmp_path, timeout_s=0, output_cap=100)
    with pytest.raises(ValueError, match="NUL"):
        await run_shell("ls\x00", cwd=tmp_path, timeout_s=5, output_cap=100)
    with pytest.raises(ValueError, match="output_cap"):
        await run_shell("ls", cwd=tmp_path, timeout_s=5, output_cap=0)


def test_render_without_output() -> None:
    r = ShellResult(
        exit_code=0, output="", truncated_bytes=0, timed_out=False, cancelled=False, duration_s=0.1
    )
    assert r.render() == "exit code: 0\n(no output)"


def test_helper_sees_live_process() -> None:
    assert not _dead(os.getpid())
