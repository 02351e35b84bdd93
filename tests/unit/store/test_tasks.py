from __future__ import annotations

import pytest

from ndomo.store.artifacts import RESULT_LIMIT
from ndomo.store.errors import Invalid, NotFound, Refused
from ndomo.store.models import TaskCreate

from .conftest import make_plan


async def test_batch_over_five_warns_but_creates(store):
    plan = await make_plan(store)
    five = await store.create_tasks(plan.id, [TaskCreate(description=f"t{i}") for i in range(5)])
    assert len(five.tasks) == 5 and five.warnings == []
    six = await store.create_tasks(plan.id, [{"description": "t5"}])
    assert len(six.tasks) == 1 and any(">5" in w for w in six.warnings)
    assert len(await store.list_tasks(plan.id)) == 6


async def test_dedupe_keeps_order_and_files(store):
    plan = await make_plan(store)
    batch = await store.create_tasks(
        plan.id,
        [
            {"description": "write parser", "files": ["p.py"]},
            {"description": "write  parser "},
            {"description": "write tests", "files": ["t.py"]},
        ],
    )
    assert [t.description for t in batch.tasks] == ["write parser", "write tests"]
    assert [t.ord for t in batch.tasks] == [1, 2]
    assert any("duplicate" in w for w in batch.warnings)
    again = await store.create_tasks(plan.id, [{"description": "write tests"}])
    assert again.tasks == [] and again.warnings
    files = {(f.file_path, f.role) for f in (await store.get_plan(plan.id)).files}
    assert files == {("p.py", "modified"), ("t.py", "modified")}
    t = batch.tasks[0]
    assert t.original_plan_data and '"files": ["p.py"]' in t.original_plan_data


async def test_router_splits_and_dependencies_follow(store):
    plan = await make_plan(store)

    def router(t: TaskCreate) -> list[TaskCreate]:
        if len(t.files) > 1:
            return [
                t.model_copy(
                    update={"description": f"{t.description} ({f})", "files": [f], "agent": "smith"}
                )
                for f in t.files
            ]
        return [t.model_copy(update={"agent": t.agent or "smith"})]

    batch = await store.create_tasks(
        plan.id,
        [
            {"description": "api + ui", "files": ["a.go", "b.vue"]},
            {"description": "docs", "dependencies": [1]},
        ],
        router=router,
    )
    a, b, docs = batch.tasks
    assert (a.files, b.files, docs.agent) == (["a.go"], ["b.vue"], "smith")
    assert docs.dependencies == [a.id, b.id]


async def test_bad_dependencies_refused_and_nothing_written(store):
    plan = await make_plan(store)
    for deps in ([2], [0], [7]):
        with pytest.raises(Invalid, match="depend"):
            await store.create_tasks(
                plan.id, [{"description": "x"}, {"description": "y", "dependencies": deps}]
            )
    assert await store.list_tasks(plan.id) == []


async def test_create_tasks_refused_on_finished_plan_and_unknown_plan(store):
    plan = await make_plan(store)
    await store.update_plan_status(plan.id, "abandoned")
    with pytest.raises(Refused):
        await store.create_tasks(plan.id, [{"description": "x"}])
    with pytest.raises(NotFound):
        await store.create_tasks("nope", [{"description": "x"}])


async def test_claim_respects_dependencies_and_agent(store):
    plan = await make_plan(store)
    await store.create_tasks(
        plan.id,
        [
            {"description": "first", "agent": "smith"},
            {"description": "second", "agent": "smith", "dependencies": [1]},
            {"description": "other", "agent": "painter"},
        ],
    )
    t1 = await store.next_task_for_agent("smith", session_id="s9")
    assert t1.description == "first" and t1.status == "running" and t1.claimed_by == "smith"
    assert await store.peek_task_for_agent("smith") is None  # second waits for first
    assert await store.next_task_for_agent("smith") is None
    p = await store.get_plan(plan.id)
    assert (p.status, p.executed_by_agent, p.executed_by_session) == ("executing", "smith", "s9")
    await store.update_task_status(t1.id, "done", result="ok")
    peek = await store.peek_task_for_agent("smith")
    assert peek.description == "second" and peek.status == "pending"
    t2 = await store.next_task_for_agent("smith", plan_id=plan.slug)
    assert t2.id == peek.id and t2.status == "running"
    assert (await store.next_task_for_agent("painter")).description == "other"


async def test_claim_skips_unfinished_dependency_states(store):
    plan = await make_plan(store)
    await store.create_tasks(
        plan.id,
        [
            {"description": "a", "agent": "x"},
            {"description": "b", "agent": "x", "dependencies": [1]},
        ],
    )
    a = await store.next_task_for_agent("x")
    await store.update_task_status(a.id, "failed", error="e")
    assert await store.next_task_for_agent("x") is None


async def test_status_timestamps_and_first_running_moves_plan(store):
    plan = await make_plan(store, tasks=1)
    (t,) = await store.list_tasks(plan.id)
    running = await store.update_task_status(t.id, "running", agent="craftsman", session_id="sx")
    assert running.started_at and running.finished_at is None
    p = await store.get_plan(plan.id)
    assert (p.status, p.executed_by_agent, p.executed_by_session) == (
        "executing",
        "craftsman",
        "sx",
    )
    assert [a.to_status for a in p.audit] == ["approved", "executing"]
    done = await store.update_task_status(t.id, "done", result="fine", tokens=12)
    assert done.finished_at and done.duration_ms is not None and done.tokens == 12
    again = await store.update_task_status(t.id, "pending")
    assert again.started_at is None and again.finished_at is None


async def test_bad_task_input(store):
    plan = await make_plan(store, tasks=1)
    (t,) = await store.list_tasks(plan.id)
    with pytest.raises(Invalid, match="unknown task status"):
        await store.update_task_status(t.id, "finished")
    with pytest.raises(NotFound, match="9999"):
        await store.update_task_status(9999, "done")
    with pytest.raises(Invalid):
        await store.update_task_status(True, "done")
    with pytest.raises(Invalid):
        await store.next_task_for_agent("")


async def test_large_result_spills_to_artifact(store, tmp_path):
    plan = await make_plan(store, tasks=1)
    (t,) = await store.list_tasks(plan.id)
    big = "".join(f"line {i} é\n" for i in range(5000))
    assert len(big.encode()) > RESULT_LIMIT
    out = await store.update_task_status(t.id, "done", result=big)
    assert out.result_spilled and out.result_artifact == f".ndomo/artifacts/{t.id}.txt"
    assert (tmp_path / out.result_artifact).read_text() == big
    assert len(out.result.encode()) <= RESULT_LIMIT
    assert big.startswith(out.result.split("\n…")[0])
    assert f".ndomo/artifacts/{t.id}.txt" in out.result.splitlines()[-1]
    assert (await store.get_task(t.id)).model_dump()["result_spilled"] is True
    small = await store.update_task_status(t.id, "done", result="short")
    assert not small.result_spilled and small.result == "short"


async def test_tasks_of_finished_plan_are_closed(store):
    plan = await make_plan(store, tasks=1)
    (t,) = await store.list_tasks(plan.id)
    await store.update_plan_status(plan.id, "abandoned")
    with pytest.raises(Refused):
        await store.update_task_status(t.id, "running")
    assert await store.next_task_for_agent("smith") is None
