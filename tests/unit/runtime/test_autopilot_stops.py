"""Autopilot in code: a plain stop with plan tasks pending, or without an answer, is re-prompted
(bounded); the turn ends `done` only once the tasks are done or the model said why."""

from __future__ import annotations

from ndomo import compose
from ndomo.runtime.context import TurnRequest
from ndomo.runtime.runtime import Runtime
from ndomo.runtime.tools import AllowAll


def runtime(app):
    plugins = compose.plugins()
    plugins.tools.policy = AllowAll()  # the stop rule is judged here, not the agents' permissions
    return Runtime(app, plugins)


async def committed_plan(rt, tasks=("write the parser", "test the parser")):
    store = await rt.app.store()
    plan = await store.create_plan({"title": "parser", "overview": "a parser with tests"})
    await store.create_tasks(plan.id, [{"description": d, "agent": "craftsman"} for d in tasks])
    await store.approve_plan(plan.id)
    state = await rt.session()
    await store.update_session(state.id, committed_plan_id=plan.id)
    state.committed_plan_id = plan.id
    return await store.get_plan(plan.id)


def users(request):
    return [m["content"] for m in request["body"]["messages"] if m["role"] == "user"]


async def test_a_stop_with_plan_tasks_pending_is_re_prompted_until_they_are_done(app, fake):
    rt = runtime(app)
    plan = await committed_plan(rt)
    first, second = plan.tasks
    fake.push({"text": "I think that's it."})  # stops early: both tasks still pending
    fake.push(
        {
            "tool_calls": [
                {"name": "task_update_status", "arguments": {"id": first.id, "status": "done"}},
                {"name": "task_update_status", "arguments": {"id": second.id, "status": "done"}},
            ]
        }
    )
    fake.push({"text": "Both tasks done; tests pass."})
    summary = await rt.run(TurnRequest(prompt="build it", mode="autopilot", agent="craftsman"))
    assert summary.status == "done" and summary.answer == "Both tasks done; tests pass."
    assert len(fake.chat_requests()) == 3
    nudge = users(fake.chat_requests()[1])[-1]
    assert nudge.startswith("Autopilot: you stopped, but your plan is not finished:")
    assert f"task #{first.id} [pending] write the parser" in nudge and f"task #{second.id}" in nudge


async def test_after_a_re_prompt_an_answer_is_its_reason_and_the_turn_is_done(app, fake):
    rt = runtime(app)
    await committed_plan(rt)
    fake.push({"text": "Stopping here."})
    fake.push({"text": "Task 2 needs a fixture the user must provide, so I left it."})
    summary = await rt.run(TurnRequest(prompt="build it", mode="autopilot", agent="craftsman"))
    assert summary.status == "done" and "fixture" in summary.answer
    assert len(fake.chat_requests()) == 2


async def test_stopping_silently_is_re_prompted_then_ends_blocked_not_done(app, fake):
    rt = runtime(app)
    for _ in range(3):
        fake.push({"text": ""})
    summary = await rt.run(TurnRequest(prompt="do the thing", mode="autopilot", agent="craftsman"))
    assert (
        summary.status == "blocked"
        and "without a final answer or a hand-back, 2 times" in summary.handback
    )
    assert len(fake.chat_requests()) == 3
    assert users(fake.chat_requests()[1])[-1].startswith(
        "Autopilot: you stopped without a final answer."
    )


async def test_the_re_prompts_never_pass_the_iteration_cap(app, fake):
    app.settings.modes.iteration_caps = {"discussion": 8, "brainstorming": 16, "autopilot": 2}
    rt = runtime(app)
    await committed_plan(rt)
    fake.push({"text": "done?"})
    fake.push({"text": ""})
    summary = await rt.run(TurnRequest(prompt="build it", mode="autopilot", agent="craftsman"))
    assert summary.status == "capped" and len(fake.chat_requests()) == 2


async def test_a_hand_back_or_another_mode_is_not_re_prompted(app, fake):
    rt = runtime(app)
    await committed_plan(rt)
    fake.push(
        {"tool_calls": [{"name": "handback", "arguments": {"reason": "which parser library?"}}]}
    )
    blocked = await rt.run(TurnRequest(prompt="build it", mode="autopilot", agent="craftsman"))
    assert blocked.status == "blocked" and blocked.handback == "which parser library?"
    fake.push({"text": ""})
    talk = await rt.run(TurnRequest(prompt="thoughts?", mode="discussion"))
    assert talk.status == "done" and len(fake.chat_requests()) == 2


async def test_a_turn_on_one_task_is_not_held_to_the_rest_of_its_plan(app, fake):
    rt = runtime(app)
    plan = await committed_plan(rt)
    store = await app.store()
    await store.update_session((await rt.session()).id, committed_plan_id=None)
    (await rt.session()).committed_plan_id = None
    first = plan.tasks[0]
    fake.push(
        {
            "tool_calls": [
                {"name": "task_update_status", "arguments": {"id": first.id, "status": "done"}}
            ]
        }
    )
    fake.push({"text": "task 1 done"})
    summary = await rt.run(
        TurnRequest(prompt="do task 1", mode="autopilot", agent="craftsman", task_id=str(first.id))
    )
    assert summary.status == "done" and summary.answer == "task 1 done"
    assert len(fake.chat_requests()) == 2  # no re-prompt for the plan's other pending task
