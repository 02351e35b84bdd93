"""Child-process entry points for the multi-process tests (run as a script)."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

from ndomo.store.models import TaskCreate
from ndomo.store.store import PlanStore


async def claim(db: Path, workspace: Path, plan_id: str, go: Path) -> None:
    store = await PlanStore.open(db, workspace=workspace)
    print("ready", flush=True)
    while not go.exists():
        time.sleep(0.005)
    claimed = []
    try:
        while True:
            task = await store.next_task_for_agent("smith", plan_id=plan_id)
            if task is None:
                break
            claimed.append(task.id)
            await store.update_task_status(task.id, "done", result=f"by {sys.argv[-1]}")
    finally:
        await store.close()
    print(json.dumps(claimed), flush=True)


async def batch(db: Path, workspace: Path, plan_id: str, n: int, stall_at: int) -> None:
    """Start a big create_tasks and freeze mid-transaction, announcing it, until killed."""
    store = await PlanStore.open(db, workspace=workspace)

    def probe(ord_: int) -> int:
        if ord_ == stall_at:
            print("writing", flush=True)
            time.sleep(60)
        return 0

    await store._db.call(lambda c: c.create_function("ndomo_probe", 1, probe))
    await store._exec(
        "CREATE TEMP TRIGGER probe AFTER INSERT ON main.plan_tasks BEGIN SELECT ndomo_probe(NEW.ord); END"
    )
    await store.create_tasks(
        plan_id, [TaskCreate(description=f"task {i}", agent="smith") for i in range(n)]
    )
    print("finished", flush=True)


def migrate_stalled(db: Path, version: int) -> None:
    """Apply migration `version` and freeze before it commits, announcing it, until killed."""
    from ndomo.store import migrations as m
    from ndomo.store.db import connect

    i = next(k for k, mig in enumerate(m.MIGRATIONS) if mig.version == version)
    real = m.MIGRATIONS[i]

    def stalled(conn) -> None:
        assert isinstance(real.step, str)
        for stmt in m.split_sql(real.step):
            conn.execute(stmt)
        print("migrating", flush=True)
        time.sleep(60)

    m.MIGRATIONS[i] = m.Migration(version, real.name, stalled)
    m.migrate(connect(db))


if __name__ == "__main__":
    cmd, db, ws, plan = sys.argv[1:5]
    if cmd == "migrate":
        migrate_stalled(Path(db), int(plan))
    elif cmd == "claim":
        asyncio.run(claim(Path(db), Path(ws), plan, Path(sys.argv[5])))
    else:
        asyncio.run(batch(Path(db), Path(ws), plan, int(sys.argv[5]), int(sys.argv[6])))
