"""Crash recovery: a turn whose process died is marked interrupted; live owners are left alone."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import pytest

from ndomo import compose
from ndomo.app import App
from ndomo.features.recovery import TurnRecovery
from ndomo.runtime.runtime import Runtime
from ndomo.store.owner import hostname, owner_is_gone, parse_owner, pid_alive, process_owner
from ndomo.store.store import PlanStore

REPO = Path(__file__).resolve().parents[3]

HOLD_TURN = """
import asyncio, sys
from pathlib import Path
from ndomo.store.store import PlanStore

async def main():
    store = await PlanStore.open(Path(sys.argv[1]), workspace=Path(sys.argv[2]))
    turn = await store.start_turn("s-crash", "craftsman", "autopilot", "long work")
    print(turn.id, flush=True)
    await asyncio.sleep(600)

asyncio.run(main())
"""


@pytest.fixture
async def store(tmp_path):
    s = await PlanStore.open(tmp_path / ".ndomo" / "ndomo.db", workspace=tmp_path)
    yield s
    await s.close()


async def hold_turn(db: Path, root: Path) -> tuple[asyncio.subprocess.Process, int]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        HOLD_TURN,
        str(db),
        str(root),
        cwd=REPO,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    line = await asyncio.wait_for(proc.stdout.readline(), 60)
    assert line.strip(), (await proc.stderr.read()).decode()
    return proc, int(line)


def test_owner_parsing_and_liveness():
    me = process_owner()
    assert parse_owner(me) == (hostname(), os.getpid())
    assert parse_owner("host:with:colons:12") == ("host:with:colons", 12)
    assert (
        parse_owner("nopid") is None and parse_owner("h:x") is None and parse_owner("h:0") is None
    )
    assert pid_alive(os.getpid())
    assert not owner_is_gone(me, host=hostname())
    assert owner_is_gone(me, host=hostname(), alive=lambda pid: False)
    assert not owner_is_gone("other-host:1", host=hostname(), alive=lambda pid: False)
    assert not owner_is_gone("garbage", host=hostname(), alive=lambda pid: False)
    assert owner_is_gone(None, host=hostname())  # from before owners were recorded


async def test_start_turn_records_this_process(store):
    turn = await store.start_turn("s", "foreman", "discussion", "hi")
    assert turn.owner == f"{hostname()}:{os.getpid()}"


async def test_only_turns_of_dead_processes_on_this_host_are_marked(store):
    live = await store.start_turn("s", "a", "autopilot", "mine, running")
    other_host = await store.start_turn(
        "s", "a", "autopilot", "elsewhere", owner="far-away-host:4242"
    )
    dead = await store.start_turn("s", "a", "autopilot", "crashed", owner=f"{hostname()}:4242")
    finished = await store.start_turn("s", "a", "autopilot", "done", owner=f"{hostname()}:4242")
    await store.finish_turn(finished.id, "done")
    legacy = await store.start_turn("s", "a", "autopilot", "pre-v11")
    await store._exec("UPDATE turns SET owner = NULL WHERE id = ?", (legacy.id,))

    marked = await store.mark_interrupted_turns(alive=lambda pid: pid == os.getpid())
    assert marked == 2
    status = {t.id: t.status for t in await store.list_turns("s")}
    assert status == {
        live.id: "running",
        other_host.id: "running",
        dead.id: "interrupted",
        finished.id: "done",
        legacy.id: "interrupted",
    }
    row = await store.get_turn(dead.id)
    assert row.finished_at and "interrupted" in row.error
    assert await store.mark_interrupted_turns(alive=lambda pid: pid == os.getpid()) == 0


async def test_sigkilled_process_turn_is_marked_while_a_live_one_is_kept(tmp_path, store):
    killed, killed_turn = await hold_turn(store.db_path, tmp_path)
    alive, alive_turn = await hold_turn(store.db_path, tmp_path)
    try:
        killed.send_signal(signal.SIGKILL)
        await killed.wait()
        assert await store.mark_interrupted_turns() == 1
        assert (await store.get_turn(killed_turn)).status == "interrupted"
        assert (await store.get_turn(alive_turn)).status == "running"
    finally:
        for p in (killed, alive):
            if p.returncode is None:
                p.kill()
                await p.wait()


async def test_runtime_creation_schedules_recovery_once(tmp_path):
    pre = await PlanStore.open(tmp_path / ".ndomo" / "ndomo.db", workspace=tmp_path)
    crashed = await pre.start_turn(
        "s", "a", "autopilot", "crashed", owner=f"{hostname()}:{2**22 + 7}"
    )
    await pre.close()
    app = App(tmp_path)
    try:
        Runtime.of(app, compose.plugins())
        recovery = app.existing(TurnRecovery)
        assert recovery is not None
        assert await recovery.wait() == 1
        Runtime(app, compose.plugins())  # a second runtime on the same App does not schedule again
        assert app.existing(TurnRecovery) is recovery
        store = await app.store()
        assert (await store.get_turn(crashed.id)).status == "interrupted"
    finally:
        await app.aclose()


def test_a_process_names_one_owner_for_its_whole_life(monkeypatch):
    # Its claims and turns are released and finished under the name they were made with,
    # even when the host is renamed meanwhile (and the name is not asked for on every turn).
    import socket

    from ndomo.store import owner

    names = iter(["first-name", "renamed"])
    monkeypatch.setattr(socket, "gethostname", lambda: next(names))
    owner.hostname.cache_clear()
    try:
        assert process_owner() == process_owner() == f"first-name:{os.getpid()}"
    finally:
        owner.hostname.cache_clear()
