from __future__ import annotations

import sqlite3

import pytest

from ndomo.store.errors import WriteOnceViolation

from .conftest import make_plan

PLAN_FIELDS = ["original_plan_data", "created_by_agent", "executed_by_agent", "executed_by_session"]


async def _full_plan(store):
    plan = await make_plan(store, created_by_agent="foreman", tasks=1)
    await store.approve_plan(plan.id)
    await store.update_plan_status(plan.id, "executing", actor="craftsman", session_id="s1")
    await store.ensure_session("s2")
    return plan


@pytest.mark.parametrize("field", PLAN_FIELDS)
@pytest.mark.parametrize("new", ["s2", None])
async def test_raw_sql_cannot_overwrite_plan_field(store, field, new):
    plan = await _full_plan(store)
    before = (await store._one(f"SELECT {field} FROM plans WHERE id = ?", (plan.id,)))[0]
    assert before is not None
    with pytest.raises(sqlite3.IntegrityError, match=f"write-once: plans.{field}"):
        await store._exec(f"UPDATE plans SET {field} = ? WHERE id = ?", (new, plan.id))
    assert (await store._one(f"SELECT {field} FROM plans WHERE id = ?", (plan.id,)))[0] == before


@pytest.mark.parametrize("field", PLAN_FIELDS)
async def test_null_to_value_allowed_once(store, field):
    plan = await make_plan(store)
    await store.ensure_session("s1")
    await store._exec(
        f"UPDATE plans SET {field} = NULL WHERE id = ? AND {field} IS NULL", (plan.id,)
    )
    if field == "original_plan_data":
        await store._exec(
            "INSERT INTO plans(id, slug, title, overview, created_at, updated_at)"
            " VALUES ('p2', 'p2', 't', 'o', 'x', 'x')"
        )
        pid = "p2"
    else:
        pid = plan.id
    await store._exec(f"UPDATE plans SET {field} = 's1' WHERE id = ?", (pid,))
    await store._exec(f"UPDATE plans SET {field} = 's1' WHERE id = ?", (pid,))  # same value: no-op
    with pytest.raises(sqlite3.IntegrityError):
        await store._exec(f"UPDATE plans SET {field} = 'other' WHERE id = ?", (pid,))


@pytest.mark.parametrize("new", ["{}", None])
async def test_task_original_plan_data_write_once(store, new):
    plan = await make_plan(store, tasks=1)
    (t,) = await store.list_tasks(plan.id)
    with pytest.raises(sqlite3.IntegrityError, match="write-once: plan_tasks.original_plan_data"):
        await store._exec("UPDATE plan_tasks SET original_plan_data = ? WHERE id = ?", (new, t.id))
    assert (await store.get_task(t.id)).original_plan_data == t.original_plan_data


async def test_store_code_paths_surface_write_once_as_store_error(store):
    plan = await _full_plan(store)
    with pytest.raises(WriteOnceViolation):
        await store._write(
            lambda c: c.execute("UPDATE plans SET created_by_agent = 'x' WHERE id = ?", (plan.id,))
        )
    p = await store.get_plan(plan.id)
    assert p.created_by_agent == "foreman"
    # status changes and task updates keep working and never overwrite
    (t,) = await store.list_tasks(plan.id)
    await store.update_task_status(t.id, "running", agent="other", session_id="s2")
    p = await store.get_plan(plan.id)
    assert (p.executed_by_agent, p.executed_by_session) == ("craftsman", "s1")
