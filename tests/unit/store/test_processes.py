"""Several OS processes on one database file: exact-once claims and crash safety."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

from ndomo.store.models import TaskCreate

from .conftest import make_plan

WORKER = Path(__file__).with_name("_worker.py")
N_TASKS = 240


def _spawn(*args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(WORKER), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


async def test_two_processes_claim_every_task_exactly_once(store, tmp_path):
    plan = await make_plan(store)
    await store.create_tasks(
        plan.id, [TaskCreate(description=f"job {i}", agent="smith") for i in range(N_TASKS)]
    )
    go = tmp_path / "go"
    procs = [
        _spawn("claim", str(store.db_path), str(tmp_path), plan.id, str(go), f"w{i}")
        for i in range(2)
    ]
    try:
        for p in procs:
            assert p.stdout.readline().strip() == "ready"
        go.touch()
        outs = [p.communicate(timeout=120) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    claimed = []
    for p, (out, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err
        claimed.append(json.loads(out.strip().splitlines()[-1]))
    every = claimed[0] + claimed[1]
    assert len(every) == N_TASKS  # none claimed twice…
    assert set(every) == {t.id for t in await store.list_tasks(plan.id)}  # …and none lost
    assert not set(claimed[0]) & set(claimed[1])
    progress = await store.plan_progress(plan.id)
    assert progress.done == N_TASKS


async def test_writer_killed_mid_batch_leaves_consistent_db(store, tmp_path):
    plan = await make_plan(store)
    await store.create_tasks(plan.id, [TaskCreate(description="already there")])
    await store.close()  # the parent holds no connection while the child writes
    child = _spawn("batch", str(store.db_path), str(tmp_path), plan.id, "500", "250")
    try:
        line = child.stdout.readline().strip()
        assert line == "writing", child.stderr.read()
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == -signal.SIGKILL
    conn = sqlite3.connect(store.db_path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        n = conn.execute(
            "SELECT count(*) FROM plan_tasks WHERE plan_id = ?", (plan.id,)
        ).fetchone()[0]
        assert n == 1  # the killed batch of 500 is entirely absent
        doc = conn.execute(
            "SELECT tasks FROM plan_search WHERE rowid = (SELECT search_key FROM plans WHERE id = ?)",
            (plan.id,),
        ).fetchone()[0]
        assert doc == "already there"  # the killed batch left nothing in the search document
        conn.execute("INSERT INTO plan_search(plan_search) VALUES ('integrity-check')")
    finally:
        conn.close()


async def test_a_process_killed_mid_migration_loses_nothing(tmp_path):
    """v21 rebuilds the search index in one transaction: killed before it commits, the
    file is v20 as it was, and the next open applies the step whole."""
    from ndomo.store.db import connect
    from ndomo.store.migrations import LATEST_VERSION, migrate
    from ndomo.store.store import PlanStore

    db = tmp_path / ".ndomo" / "ndomo.db"
    conn = connect(db)
    migrate(conn, target=20)
    conn.execute(
        "INSERT INTO plans(id, slug, title, overview, created_at, updated_at)"
        " VALUES ('p1', 'p1', 'Legacy ledger', 'kept', 't', 't')"
    )
    conn.execute("INSERT INTO plan_files(plan_id, file_path) VALUES ('p1', 'src/old.py')")
    conn.execute("INSERT INTO plan_tasks(plan_id, ord, description) VALUES ('p1', 1, 'tune it')")
    conn.close()
    child = _spawn("migrate", str(db), str(tmp_path), "21")
    try:
        line = child.stdout.readline().strip()
        assert line == "migrating", child.stderr.read()
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == -signal.SIGKILL
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("SELECT max(version) FROM schema_version").fetchone()[0] == 20
        cols = [r[1] for r in conn.execute("PRAGMA table_info(plan_search)")]
        assert cols == ["title", "overview", "approach", "tasks"]  # the v20 index, whole
        hits = conn.execute(
            "SELECT rowid FROM plan_search WHERE plan_search MATCH 'ledger AND tune'"
        ).fetchall()
        assert len(hits) == 1
        conn.execute("INSERT INTO plan_search(plan_search) VALUES ('integrity-check')")
    finally:
        conn.close()
    store = await PlanStore.open(db, workspace=tmp_path)
    try:
        assert (await store._one("SELECT max(version) FROM schema_version"))[0] == LATEST_VERSION
        found = await store.search_plans("ledger tune", file_path="src")
        assert [p.id for p in found] == ["p1"]
    finally:
        await store.close()
