from __future__ import annotations

import itertools
import json

import pytest
from pydantic import ValidationError

from ndomo.store.errors import Invalid, InvalidTransition, NotFound, Refused
from ndomo.store.models import PLAN_STATUSES, PlanCreate
from ndomo.store.plan_ops import TRANSITIONS

from .conftest import make_plan, to_status

# How to reach each status from draft through legal moves.
PATH = {
    "draft": (),
    "approved": ("approved",),
    "executing": ("approved", "executing"),
    "completed": ("approved", "executing", "completed"),
    "failed": ("approved", "executing", "failed"),
    "abandoned": ("abandoned",),
}
ILLEGAL = [
    (a, b) for a, b in itertools.product(PLAN_STATUSES, PLAN_STATUSES) if b not in TRANSITIONS[a]
]


async def test_create_derives_unique_slug_and_snapshots_input(store):
    a = await make_plan(
        store, "Add Login Page!", files=["src/a.py"], tags=["auth"], created_by_agent="foreman"
    )
    b = await make_plan(store, "Add login page")
    assert (a.slug, b.slug) == ("add-login-page", "add-login-page-2")
    assert a.status == "draft" and a.created_by_agent == "foreman"
    snap = json.loads(a.original_plan_data)
    assert snap["title"] == "Add Login Page!" and snap["files"] == ["src/a.py"]
    detail = await store.get_plan(a.slug)
    assert detail.id == a.id and detail.tags == ["auth"]
    assert [(f.file_path, f.role) for f in detail.files] == [("src/a.py", "input")]


@pytest.mark.parametrize("slug", ["Bad Slug", "a--b", "-a", "x" * 61, ""])
def test_bad_slug_rejected(slug):
    with pytest.raises(ValidationError, match="slug"):
        PlanCreate(slug=slug, title="t", overview="o")


def test_overview_required_and_complexity_strict():
    with pytest.raises(ValidationError):
        PlanCreate(title="t", overview="")
    with pytest.raises(ValidationError):
        PlanCreate(title="t", overview="o", complexity="3")
    with pytest.raises(ValidationError):
        PlanCreate(title="t", overview="o", complexity=6)


async def test_unknown_plan_is_a_clear_error(store):
    with pytest.raises(NotFound, match="no-such-plan"):
        await store.get_plan("no-such-plan")
    with pytest.raises(Invalid, match="unknown plan status"):
        await store.update_plan_status((await make_plan(store)).id, "done")


@pytest.mark.parametrize("src,dst", ILLEGAL)
async def test_illegal_transition_refused_and_nothing_changes(store, src, dst):
    plan = await make_plan(store)
    await to_status(store, plan.id, *PATH[src])
    before = await store.get_plan(plan.id)
    with pytest.raises(InvalidTransition, match=f"{src}"):
        await store.update_plan_status(plan.id, dst, actor="test")
    after = await store.get_plan(plan.id)
    assert after.status == src and len(after.audit) == len(before.audit)


@pytest.mark.parametrize("src,dst", [(a, b) for a in TRANSITIONS for b in TRANSITIONS[a]])
async def test_legal_transition_writes_audit(store, src, dst):
    plan = await make_plan(store)
    await to_status(store, plan.id, *PATH[src])
    change = await store.update_plan_status(plan.id, dst, actor="alice", reason="because")
    assert change.applied and change.from_status == src and change.to_status == dst
    detail = await store.get_plan(plan.id)
    assert detail.status == dst
    last = detail.audit[-1]
    assert (last.actor, last.from_status, last.to_status, last.forced) == ("alice", src, dst, False)


async def test_completing_with_open_tasks_is_refused_listing_them(store):
    plan = await make_plan(store, tasks=3)
    await to_status(store, plan.id, "approved", "executing")
    tasks = await store.list_tasks(plan.id)
    await store.update_task_status(tasks[0].id, "done")
    await store.update_task_status(tasks[1].id, "running")
    with pytest.raises(Refused) as err:
        await store.update_plan_status(plan.id, "completed")
    assert len(err.value.blockers) == 2
    assert "task 2 is running" in err.value.message and "task 3 is pending" in err.value.message
    assert (await store.get_plan(plan.id)).status == "executing"


async def test_dry_run_reports_without_writing(store):
    plan = await make_plan(store, tasks=1)
    await to_status(store, plan.id, "approved", "executing")
    bad = await store.update_plan_status(plan.id, "completed", dry_run=True)
    assert not bad.allowed and not bad.applied and bad.blockers
    ok = await store.update_plan_status(plan.id, "abandoned", dry_run=True)
    assert ok.allowed and not ok.applied
    illegal = await store.update_plan_status(plan.id, "draft", dry_run=True)
    assert not illegal.allowed and "cannot go from executing" in illegal.message
    detail = await store.get_plan(plan.id)
    assert detail.status == "executing" and len(detail.audit) == 2 and detail.archived_at is None


async def test_force_needs_reason_and_is_marked_in_audit(store):
    plan = await make_plan(store, tasks=1)
    with pytest.raises(Invalid, match="reason"):
        await store.update_plan_status(plan.id, "completed", force=True)
    change = await store.update_plan_status(
        plan.id, "completed", actor="bob", force=True, reason="done by hand"
    )
    assert change.applied and change.forced
    last = (await store.get_plan(plan.id)).audit[-1]
    assert last.forced and last.reason == "done by hand" and last.to_status == "completed"


async def test_executing_sets_executed_by_once(store):
    plan = await make_plan(store, created_by_agent="foreman")
    await store.update_plan_status(plan.id, "approved", actor="user")
    await store.update_plan_status(plan.id, "executing", actor="craftsman", session_id="s1")
    p = await store.get_plan(plan.id)
    assert (p.executed_by_agent, p.executed_by_session) == ("craftsman", "s1")
    assert (await store.get_session("s1")).id == "s1"  # created on demand
    await store.update_plan_status(plan.id, "draft", actor="x", force=True, reason="redo")
    await store.update_plan_status(plan.id, "approved", actor="x")
    await store.update_plan_status(plan.id, "executing", actor="other", session_id="s2")
    p = await store.get_plan(plan.id)
    assert (p.executed_by_agent, p.executed_by_session, p.created_by_agent) == (
        "craftsman",
        "s1",
        "foreman",
    )


async def test_progress(store):
    plan = await make_plan(store, tasks=4)
    ts = await store.list_tasks(plan.id)
    await store.update_task_status(ts[0].id, "done")
    await store.update_task_status(ts[1].id, "failed", error="boom")
    await store.update_task_status(ts[2].id, "blocked")
    p = await store.plan_progress(plan.slug)
    assert p.model_dump() == dict(
        total=4, done=1, failed=1, blocked=1, running=0, pending=1, percent=25
    )


# ------------------------------------------------------------------ delete


async def test_delete_refuses_without_real_true(store):
    plan = await make_plan(store)
    await store.update_plan_status(plan.id, "abandoned")
    for confirm in (False, "true", 1, None):
        with pytest.raises(Refused, match="confirm"):
            await store.delete_plan(plan.id, confirm)
    assert (await store.get_plan(plan.id)).id == plan.id


async def test_delete_refuses_draft(store):
    plan = await make_plan(store)
    with pytest.raises(Refused, match="draft"):
        await store.delete_plan(plan.id, True)
    assert (await store.get_plan(plan.id)).status == "draft"


@pytest.mark.parametrize("active", ["pending", "running"])
async def test_delete_refuses_active_tasks(store, active):
    plan = await make_plan(store, tasks=2)
    await to_status(store, plan.id, "approved", "executing")
    ts = await store.list_tasks(plan.id)
    await store.update_task_status(ts[0].id, "done")
    await store.update_task_status(ts[1].id, active)
    with pytest.raises(Refused, match="active tasks"):
        await store.delete_plan(plan.id, True)
    assert len(await store.list_tasks(plan.id)) == 2


async def test_delete_cascades_tasks_tags_files(store):
    plan = await make_plan(store, files=["a.py"], tags=["x", "y"])
    await store.create_tasks(plan.id, [{"description": "one", "files": ["b.py"]}])
    await to_status(store, plan.id, "approved", "executing")
    (t,) = await store.list_tasks(plan.id)
    await store.update_task_status(t.id, "done")
    await store.update_plan_status(plan.id, "completed")
    out = await store.delete_plan(plan.slug, True)
    assert out.tasks_deleted == 1
    for table in ("plan_tasks", "plan_tags", "plan_files", "plans"):
        key = "id" if table == "plans" else "plan_id"
        row = await store._one(f"SELECT count(*) FROM {table} WHERE {key} = ?", (plan.id,))
        assert row[0] == 0, table
    docs, plans = await store._one(
        "SELECT (SELECT count(*) FROM plan_search), (SELECT count(*) FROM plans)"
    )
    assert docs == plans  # the plan's search document went with it
    with pytest.raises(NotFound):
        await store.get_plan(plan.id)


# ------------------------------------------------------------------ search


async def test_fts_search_plans_and_tasks_and_file_filter(store):
    a = await make_plan(
        store, "Login page", overview="OAuth flow for users", files=["web/login.vue"]
    )
    b = await make_plan(store, "Billing", overview="Invoices", approach="Use Stripe webhooks")
    await store.create_tasks(
        b.id, [{"description": "Write the reconciliation job", "files": ["jobs/recon.py"]}]
    )

    def ids(plans):
        return {p.id for p in plans}

    assert ids(await store.search_plans("oauth")) == {a.id}
    assert ids(await store.search_plans("stripe")) == {b.id}
    assert ids(await store.search_plans("reconcil")) == {b.id}  # task description, prefix match
    assert ids(await store.search_plans('weird "quote: -syntax')) == set()  # no FTS syntax error
    assert ids(await store.search_plans(file_path="web/login.vue")) == {a.id}
    assert ids(await store.search_plans(file_path="jobs")) == {b.id}  # a folder
    assert ids(await store.search_plans("oauth", file_path="jobs")) == set()
    await store.update_plan_status(a.id, "abandoned")
    assert ids(await store.search_plans("oauth")) == set()
    assert ids(await store.search_plans("oauth", include_archived=True)) == {a.id}


async def test_fts_follows_updates(store):
    a = await make_plan(store, "Alpha", overview="first words")
    await store._exec("UPDATE plans SET overview = 'second words' WHERE id = ?", (a.id,))
    assert await store.search_plans("first") == []
    assert [p.id for p in await store.search_plans("second")] == [a.id]


async def test_list_plans_filters(store):
    a = await make_plan(store, "A")
    b = await make_plan(store, "B")
    await store.approve_plan(b.id)
    assert [p.id for p in await store.list_plans("approved")] == [b.id]
    assert {p.id for p in await store.list_plans()} == {a.id, b.id}
    await store.update_plan_status(a.id, "abandoned")
    assert [p.id for p in await store.list_plans()] == [b.id]
    assert len(await store.list_plans(include_archived=True)) == 2
