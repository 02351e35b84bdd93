"""Two server processes on one workspace database: no lost update, no lock error reaches a user."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from ndomo.store.store import PlanStore
from tests.fakes.fake_model import FakeModel

REPO = Path(__file__).resolve().parents[3]
TASKS = 60
TURNS = 12


async def test_two_processes_share_turns_and_task_claims(tmp_path):
    store = await PlanStore.open(tmp_path / ".ndomo" / "ndomo.db", workspace=tmp_path)
    plan = await store.create_plan({"title": "shared", "overview": "two servers claim these"})
    await store.create_tasks(
        plan.id, [{"description": f"task {i}", "agent": "smith"} for i in range(TASKS)]
    )
    await store.approve_plan(plan.id)
    with FakeModel(default_text="done") as fake:
        procs = [
            await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "tests.unit.reliability._worker",
                str(tmp_path),
                fake.url,
                name,
                str(TURNS),
                cwd=REPO,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
            for name in ("a", "b")
        ]
        outs = await asyncio.gather(*(asyncio.wait_for(p.communicate(), 120) for p in procs))
    results = []
    for proc, (stdout, stderr) in zip(procs, outs, strict=True):
        assert proc.returncode == 0, stderr.decode()[-2000:]
        assert "locked" not in stderr.decode().lower()
        results.append(json.loads(stdout.decode().strip().splitlines()[-1]))
    for r in results:
        assert r["errors"] == [], r["errors"]
        assert r["turns"] == ["done"] * TURNS
    a, b = (set(r["claimed"]) for r in results)
    assert not a & b, "a task was claimed twice"
    tasks = await store.list_tasks(plan.id)
    assert len(a | b) == TASKS and all(t.status == "done" for t in tasks)
    by_result = {t.id: t.result for t in tasks}
    assert all(by_result[i] == "a" for i in a) and all(by_result[i] == "b" for i in b)
    rows = await store._all("SELECT status, count(*) FROM turns GROUP BY status")
    assert {r[0]: r[1] for r in rows} == {"done": 2 * TURNS}
    assert (await store.plan_progress(plan.id)).done == TASKS
    await store.close()
