"""get_plan / plan_progress in one round trip, and the session cache seeing other writers."""

from __future__ import annotations

import pytest

from ndomo.runtime.runtime import Runtime
from ndomo.store.errors import Invalid, NotFound
from ndomo.store.models import PlanCreate
from ndomo.store.store import PlanStore


@pytest.fixture
async def store(tmp_path):
    s = await PlanStore.open(tmp_path / "ndomo.db", workspace=tmp_path)
    yield s
    await s.close()


async def test_get_plan_and_progress_by_id_or_slug(store):
    plan = await store.create_plan(
        PlanCreate(title="Fast reads", overview="o", files=["b.py", "a.py"], tags=["perf"])
    )
    await store.create_tasks(plan.id, [{"description": "one"}, {"description": "two"}])
    for key in (plan.id, plan.slug):
        d = await store.get_plan(key)
        assert d.id == plan.id and [t.description for t in d.tasks] == ["one", "two"]
        assert [f.file_path for f in d.files] == ["a.py", "b.py"] and d.tags == ["perf"]
        p = await store.plan_progress(key)
        assert (p.total, p.pending, p.done) == (2, 2, 0)


async def test_progress_of_a_plan_without_tasks_and_missing_plans(store):
    plan = await store.create_plan(PlanCreate(title="Empty", overview="o"))
    assert (await store.plan_progress(plan.slug)).total == 0
    with pytest.raises(NotFound):
        await store.get_plan("nope")
    with pytest.raises(NotFound):
        await store.plan_progress("nope")
    with pytest.raises(Invalid):
        await store.get_plan("  ")


async def test_session_cache_sees_a_write_by_another_connection(app, monkeypatch):
    import ndomo.store.store as store_mod

    monkeypatch.setattr(store_mod, "STAMP_SETTLE_NS", 0)  # trust the stamp at once
    rt = Runtime.of(app)
    state = await rt.session()
    await rt.session()  # the first read of a new session only records the stamp
    store = await app.store()
    calls = []
    real = store.get_session

    async def counting(sid):
        calls.append(sid)
        return await real(sid)

    monkeypatch.setattr(store, "get_session", counting)
    assert (await rt.session()).mode == state.mode
    assert calls == []  # nothing committed since: served from memory
    other = await PlanStore.open(store.db_path, workspace=app.root)  # e.g. the CLI in a terminal
    try:
        await other.update_session(state.id, mode="autopilot")
    finally:
        await other.close()
    assert (await rt.session()).mode == "autopilot"
    assert calls == [state.id]


async def _claim_and_finish(store):
    plan = await store.create_plan(
        {"title": "Paths", "overview": "both paths", "created_by_agent": "foreman"}
    )
    await store.create_tasks(
        plan.id,
        [{"description": "a", "agent": "craftsman"}, {"description": "b", "agent": "craftsman"}],
    )
    first = await store.next_task_for_agent("craftsman", session_id="s1")
    second = await store.next_task_for_agent("craftsman", session_id="s1")
    assert {first.description, second.description} == {"a", "b"}
    assert await store.next_task_for_agent("craftsman") is None
    for t in (first, second):
        await store.update_task_status(t.id, "done", result="ok")
    change = await store.update_plan_status(plan.id, "completed", actor="craftsman")
    detail = await store.get_plan(plan.id)
    assert change.applied and detail.status == "completed"
    assert detail.executed_by_agent == "craftsman" and detail.executed_by_session == "s1"
    assert [a.to_status for a in detail.audit][:3] == ["approved", "executing", "completed"]
    return detail


async def test_claims_transitions_and_write_once_mapping_in_one_path(tmp_path):
    """Claims, transitions and the write-once mapping, each a single hop to the store's thread."""
    from ndomo.store.errors import WriteOnceViolation
    from ndomo.store.store import PlanStore

    store = await PlanStore.open(tmp_path / "db.sqlite", workspace=tmp_path)
    try:
        detail = await _claim_and_finish(store)
        with pytest.raises(WriteOnceViolation):
            await store._write(
                lambda c: c.execute(
                    "UPDATE plans SET created_by_agent = 'someone else' WHERE id = ?", (detail.id,)
                )
            )
        assert (await store.get_plan(detail.id)).created_by_agent == "foreman"  # rolled back
    finally:
        await store.close()
