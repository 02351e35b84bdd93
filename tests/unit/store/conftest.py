from __future__ import annotations

from pathlib import Path

import pytest

from ndomo.store.models import PlanCreate, TaskCreate
from ndomo.store.store import PlanStore


@pytest.fixture
async def store(tmp_path: Path):
    s = await PlanStore.open(tmp_path / ".ndomo" / "ndomo.db", workspace=tmp_path)
    try:
        yield s
    finally:
        await s.close()


async def make_plan(store: PlanStore, title: str = "Add login page", *, tasks: int = 0, **kw):
    plan = await store.create_plan(
        PlanCreate(title=title, overview=kw.pop("overview", "Why and what."), **kw)
    )
    if tasks:
        await store.create_tasks(
            plan.id,
            [TaskCreate(description=f"step {i}", agent="smith") for i in range(1, tasks + 1)],
        )
    return plan


async def to_status(store: PlanStore, plan_id: str, *path: str) -> None:
    for st in path:
        await store.update_plan_status(plan_id, st, actor="test")
