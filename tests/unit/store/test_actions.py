from __future__ import annotations

import pytest

from ndomo import compose
from ndomo.actions import ActionError
from ndomo.app import App
from ndomo.store.models import PlanCreate


@pytest.fixture
async def app(tmp_path):
    a = App(tmp_path)
    try:
        yield a
    finally:
        await a.aclose()


async def _plan(app, title="Do things", tasks=2):
    store = await app.store()
    plan = await store.create_plan(PlanCreate(title=title, overview="o"))
    await store.create_tasks(
        plan.id, [{"description": f"t{i}", "agent": "smith"} for i in range(tasks)]
    )
    return plan


def act(name):
    a = compose.actions().get(name)
    assert a is not None, name
    return a


def test_all_actions_declared():
    names = {
        "plan.list",
        "plan.show",
        "plan.search",
        "plan.approve",
        "plan.status",
        "plan.delete",
        "plan.progress",
        "task.list",
        "task.next",
        "task.status",
        "session.list",
    }
    assert names <= {a.name for a in compose.actions().all()}


async def test_plan_list_and_show(app, tmp_path):
    plan = await _plan(app)
    assert (tmp_path / ".ndomo" / "ndomo.db").exists()
    listed = await act("plan.list").invoke(app, {})
    assert [p["slug"] for p in listed] == ["do-things"]
    shown = await act("plan.show").invoke(app, {"id": "do-things"})
    assert shown["id"] == plan.id and len(shown["tasks"]) == 2 and shown["progress"]["total"] == 2
    with pytest.raises(ActionError) as err:
        await act("plan.show").invoke(app, {"id": "missing-plan"})
    assert "missing-plan" in err.value.message and err.value.kind == "invalid"
    with pytest.raises(ActionError, match="unknown argument"):
        await act("plan.list").invoke(app, {"bogus": 1})
    with pytest.raises(ActionError):
        await act("plan.list").invoke(app, {"status": "nonsense"})


async def test_plan_delete_confirm_string_refused(app):
    plan = await _plan(app, tasks=0)
    await act("plan.status").invoke(app, {"id": plan.id, "status": "abandoned"})
    with pytest.raises(ActionError) as err:
        await act("plan.delete").invoke(app, {"id": plan.id, "confirm": "true"})
    assert err.value.field == "confirm"
    with pytest.raises(ActionError, match="confirm") as err:
        await act("plan.delete").invoke(app, {"id": plan.id})
    assert err.value.kind == "failed"
    assert (await act("plan.show").invoke(app, {"id": plan.id}))["status"] == "abandoned"
    out = await act("plan.delete").invoke(app, {"id": plan.id, "confirm": True})
    assert out["plan_id"] == plan.id


async def test_task_next_claims_and_status_flow(app):
    plan = await _plan(app)
    peek = await act("task.next").invoke(app, {"agent": "smith", "peek": True})
    assert peek["status"] == "pending"
    t = await act("task.next").invoke(app, {"agent": "smith", "plan": plan.slug})
    assert t["id"] == peek["id"] and t["status"] == "running" and t["claimed_by"] == "smith"
    t2 = await act("task.next").invoke(app, {"agent": "smith"})
    assert t2["id"] != t["id"]
    assert await act("task.next").invoke(app, {"agent": "smith"}) is None
    for tid in (t["id"], t2["id"]):
        done = await act("task.status").invoke(app, {"id": tid, "status": "done", "result": "ok"})
        assert done["status"] == "done" and done["result_spilled"] is False
    prog = await act("plan.progress").invoke(app, {"id": plan.id})
    assert prog["percent"] == 100
    tasks = await act("task.list").invoke(app, {"plan": plan.id, "status": "done"})
    assert len(tasks) == 2


async def test_plan_status_errors_and_dry_run(app):
    plan = await _plan(app, tasks=1)
    with pytest.raises(ActionError) as err:
        await act("plan.status").invoke(app, {"id": plan.id, "status": "completed"})
    assert err.value.kind == "failed" and "cannot go from draft" in err.value.message
    dry = await act("plan.status").invoke(
        app, {"id": plan.id, "status": "approved", "dry_run": True}
    )
    assert dry["allowed"] and not dry["applied"]
    ok = await act("plan.approve").invoke(app, {"id": plan.id})
    assert ok["applied"] and ok["to_status"] == "approved"
    with pytest.raises(ActionError, match="reason"):
        await act("plan.status").invoke(app, {"id": plan.id, "status": "completed", "force": True})
    found = await act("plan.search").invoke(app, {"query": "things"})
    assert [p["id"] for p in found] == [plan.id]
    sessions = await act("session.list").invoke(app, {})
    assert sessions == []
