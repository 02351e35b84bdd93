"""Idle: an `ndomo serve` that is up (App started, a document open, a plan with
diagnostics) and settled does no work: wake-ups (voluntary + involuntary context switches
summed over every thread, from /proc/<pid>/task/*/status) and CPU time (utime + stime from
/proc/<pid>/stat) over a 30 s window. The floor server is sampled in the same window.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path

from lsprotocol import types
from pygls.uris import from_fs_path

from ndomo.store.models import PlanCreate, TaskCreate
from ndomo.store.store import PlanStore
from tests.bench.common import Result
from tests.bench.lsp_client import FLOOR, NDOMO, server_pid, start, stop

WINDOW_S = 30.0
SAMPLE_S = 0.5
QUIET_SAMPLES = 4
MAX_SAMPLES = 120


def switches(pid: int) -> dict[int, int]:
    """Per thread id: voluntary + involuntary context switches so far."""
    out = {}
    for status in Path(f"/proc/{pid}/task").glob("*/status"):
        try:
            lines = status.read_text().splitlines()
        except OSError:  # the thread ended meanwhile
            continue
        out[int(status.parent.name)] = sum(
            int(line.split()[1])
            for line in lines
            if line.split(":")[0] in ("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")
        )
    return out


def woken(before: dict[int, int], after: dict[int, int]) -> int:
    return sum(n - before.get(tid, 0) for tid, n in after.items())


def cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime (fields 14, 15)


async def settle(pid: int, sample_s: float = SAMPLE_S) -> dict[int, int]:
    """Wait until no thread of `pid` switched for QUIET_SAMPLES samples in a row."""
    last, quiet = switches(pid), 0
    for _ in range(MAX_SAMPLES):
        await asyncio.sleep(sample_s)
        now = switches(pid)
        quiet = quiet + 1 if woken(last, now) == 0 else 0
        last = now
        if quiet >= QUIET_SAMPLES:
            return now
    raise RuntimeError(f"pid {pid} never went quiet in {MAX_SAMPLES * sample_s:.0f} s")


async def _up(cmd: list[str], root: Path):
    client, _ = await start(cmd, root)
    src = root / "app.py"
    src.write_text("x = 1\n")
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=from_fs_path(str(src)), language_id="python", version=1, text="x = 1\n"
            )
        )
    )
    if (
        cmd is NDOMO
    ):  # the App up, then a plan written by "another process" and seen through the watch
        await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="ndomo.mode.get", arguments=[{}])
        )
        store = await PlanStore.open(root / ".ndomo" / "ndomo.db", workspace=root)
        try:
            plan = await store.create_plan(PlanCreate(title="Idle", overview="o"))
            await store.create_tasks(plan.id, [TaskCreate(description="touch", files=["app.py"])])
        finally:
            await store.close()
    return client


async def measure(window_s: float = WINDOW_S) -> dict[str, tuple[int, float]]:
    """name → (wake-ups, CPU %) over one shared window, for ndomo and the floor."""
    out = {}
    with tempfile.TemporaryDirectory() as d1, tempfile.TemporaryDirectory() as d2:
        clients = {"ndomo": await _up(NDOMO, Path(d1)), "floor": await _up(FLOOR, Path(d2))}
        try:
            pids = {n: server_pid(c) for n, c in clients.items()}
            for pid in pids.values():
                await settle(pid)
            before = {n: (switches(p), cpu_ticks(p)) for n, p in pids.items()}
            await asyncio.sleep(window_s)
            for n, p in pids.items():
                ticks = cpu_ticks(p) - before[n][1]
                out[n] = (
                    woken(before[n][0], switches(p)),
                    100.0 * ticks / os.sysconf("SC_CLK_TCK") / window_s,
                )
        finally:
            for c in clients.values():
                await stop(c)
    return out


async def run() -> list[Result]:
    got = await measure()
    (w, cpu), (fw, fcpu) = got["ndomo"], got["floor"]
    return [
        Result("idle", f"wake-ups over {WINDOW_S:.0f} s idle", w, fw, "n", "0", w == 0),
        Result(
            "idle", f"CPU over {WINDOW_S:.0f} s idle", cpu, fcpu, "%", "0.0%", round(cpu, 1) == 0.0
        ),
    ]
