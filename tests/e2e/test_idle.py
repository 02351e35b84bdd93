"""An idle server does no work at all: no thread of it is woken while nothing changes.

Counted, not timed: the context switches (voluntary + involuntary) of every thread of the
`ndomo serve` process, from /proc. After start-up and some work have settled, the count
over a few seconds of silence must not move — one polling loop anywhere (a timer, a
`wait_for` with a timeout, a watcher that wakes every 50 ms) makes it move. Another
process's commit must still reach the editor (through the inotify watch).
"""

from __future__ import annotations

import asyncio
import sys

import pytest
from pygls.uris import from_fs_path

from ndomo.store.models import PlanCreate, TaskCreate
from ndomo.store.store import PlanStore
from tests.bench.idle import settle, switches, woken
from tests.e2e.conftest import command

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="counts context switches in /proc"
)

SAMPLE_S = 0.5
WINDOW_SAMPLES = 6  # after settling, this many samples must show no switch either


async def test_idle_server_is_never_woken_and_still_sees_other_processes(lsp, tmp_path):
    client = await lsp.start(tmp_path)
    pid = client._server.pid  # the `ndomo serve` process pytest-lsp spawned
    src = tmp_path / "app.py"
    src.write_text("x = 1\n")
    await command(client, "ndomo.mode.get", {})  # the App is up, every feature started
    # some work first: a plan from "another process" (the CLI), picked up by the watch
    store = await PlanStore.open(tmp_path / ".ndomo" / "ndomo.db", workspace=tmp_path)
    try:
        plan = await store.create_plan(PlanCreate(title="Idle check", overview="o"))
        await store.create_tasks(plan.id, [TaskCreate(description="touch app", files=["app.py"])])
    finally:
        await store.close()
    uri = from_fs_path(str(src))
    for _ in range(1200):  # up to a minute: a loaded machine is slow, not wrong
        if client.diagnostics.get(uri):
            break
        await asyncio.sleep(0.05)
    assert client.diagnostics.get(uri), "another process's plan never reached the editor"

    before = await settle(pid)
    await asyncio.sleep(SAMPLE_S * WINDOW_SAMPLES)
    after = switches(pid)
    assert woken(before, after) == 0, f"idle server threads were woken: {before} → {after}"
