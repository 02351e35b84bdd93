"""The craftsman's 2/5/1 threshold against the fake model and a real store."""

from __future__ import annotations

from ndomo.runtime.context import TurnRequest
from ndomo.runtime.host import BaseHost

from .conftest import call, put, runtime_with, tool_messages, watch, write_agent


async def test_state1_two_files_no_plan(app, fake):
    for i in (1, 2):
        fake.push(call("put", path=f"f{i}.py", content=f"x{i}\n"))
    fake.push({"text": "changed 2 files"})
    rt = runtime_with(app, put)
    states = watch(rt)
    host = BaseHost()
    summary = await rt.run(TurnRequest(prompt="fix it", agent="craftsman", mode="autopilot"), host)
    assert summary.status == "done", summary
    assert sorted(summary.modified) == ["f1.py", "f2.py"]
    store = await app.store()
    assert await store.list_plans(include_archived=True) == []
    assert "craftsman: 2 of 2 files changed" in states
    assert states[-1] == ""  # cleared when the turn ends


async def test_a_turn_that_changes_nothing_shows_no_file_count(app, fake):
    """ "craftsman: 0 of 2 files changed" says nothing a user can use: the scope state shows
    once a file changed."""
    fake.push({"text": "nothing to change"})
    rt = runtime_with(app, put)
    states = watch(rt)
    summary = await rt.run(
        TurnRequest(prompt="look", agent="craftsman", mode="autopilot"), BaseHost()
    )
    assert summary.status == "done" and summary.modified == []
    assert not any("files changed" in s for s in states), states


async def test_state2_third_file_needs_a_plan_then_passes_and_plan_completes(app, fake):
    files = ["a.py", "b.py", "c.py"]
    fake.push(call("put", path="a.py", content="a\n"))
    fake.push(call("put", path="b.py", content="b\n"))
    fake.push(call("put", path="c.py", content="c\n"))  # refused: no plan yet
    fake.push(call("plan_create", title="Fix abc", overview="three files", slug="fix-abc"))
    fake.push(
        call(
            "task_create_batch",
            plan_id="fix-abc",
            tasks=[{"description": "fix all three", "files": files, "agent": "craftsman"}],
        )
    )
    fake.push(call("task_update_status", id=1, status="running"))
    fake.push(call("put", path="c.py", content="c\n"))  # now allowed
    fake.push(call("task_update_status", id=1, status="done", result="fixed"))
    fake.push(call("plan_update_status", id="fix-abc", status="completed"))
    fake.push({"text": "done: 3 files"})
    rt = runtime_with(app, put)
    states = watch(rt)
    summary = await rt.run(
        TurnRequest(prompt="fix abc", agent="craftsman", mode="autopilot"), BaseHost()
    )
    assert summary.status == "done", summary
    requests = fake.chat_requests()
    refusal = tool_messages(requests[3])[-1]["content"]
    assert "plan_create" in refusal and "task_create_batch" in refusal and "file 3" in refusal
    assert tool_messages(requests[7])[-1]["content"] == "wrote c.py"
    assert (app.root / "c.py").read_text() == "c\n"
    store = await app.store()
    plan = (await store.list_plans(include_archived=True))[0]
    assert plan.status == "completed" and plan.archived_at is not None
    assert plan.created_by_agent == "craftsman" and plan.executed_by_agent == "craftsman"
    assert plan.executed_by_session == summary.session
    assert "craftsman: 3 of 5 files changed, following its plan" in states


async def _five_files_then_sixth(app, fake, rt):
    (app.root / "keep1.py").write_text("original 1\n")
    (app.root / "keep2.py").write_text("original 2\n")
    names = ["keep1.py", "keep2.py", "new3.py", "new4.py", "new5.py"]
    fake.push(call("plan_create", title="Big", overview="many files", slug="big"))
    fake.push(
        call(
            "task_create_batch",
            plan_id="big",
            tasks=[{"description": "everything", "files": names, "agent": "craftsman"}],
        )
    )
    for n in names:
        fake.push(call("put", path=n, content=f"changed {n}\n"))
    fake.push(call("put", path="keep1.py", content="changed again\n"))  # same file: still 5
    fake.push(call("put", path="six.py", content="six\n"))
    fake.push({"text": "should not be asked"})
    return await rt.run(
        TurnRequest(prompt="do the big thing", agent="craftsman", mode="autopilot"), BaseHost()
    )


async def test_state4_sixth_file_rolls_back_and_hands_back_to_foreman(app, fake):
    rt = runtime_with(app, put)
    states = watch(rt)
    summary = await _five_files_then_sixth(app, fake, rt)
    assert summary.status == "blocked"
    assert "foreman" in summary.handback and "6 files" in summary.handback
    assert (app.root / "keep1.py").read_bytes() == b"original 1\n"
    assert (app.root / "keep2.py").read_bytes() == b"original 2\n"
    for gone in ("new3.py", "new4.py", "new5.py", "six.py"):
        assert not (app.root / gone).exists()
    # the turn ended at the refusal: no further model call
    assert len(fake.chat_requests()) == 9
    assert "craftsman: more than 5 files, out of scope; hand it to the foreman" in states
    assert states[-1] == "craftsman handed back: more than 5 files; ask the foreman to plan it"
    store = await app.store()
    turn = await store.get_turn(summary.turn_id)
    assert turn.status == "blocked" and "foreman" in (turn.error or "")


async def test_state4_up_front_when_the_prompt_names_too_many_files(app, fake):
    rt = runtime_with(app, put)
    prompt = "rename foo in a.py, b.py, src/c.ts, d.go, e.rs and f.zig"
    summary = await rt.run(
        TurnRequest(prompt=prompt, agent="craftsman", mode="autopilot"), BaseHost()
    )
    assert summary.status == "blocked" and "foreman" in summary.handback
    assert fake.chat_requests() == []


async def test_threshold_comes_from_the_agent_file(app, fake):
    from ndomo.agents.loader import builtin_agents_dir

    text = (builtin_agents_dir() / "craftsman.md").read_text()
    text = text.replace("  direct: 2\n  planned: 5\n", "  direct: 1\n  planned: 5\n")
    (app.root / ".ndomo" / "agents").mkdir(parents=True)
    (app.root / ".ndomo" / "agents" / "craftsman.md").write_text(text)
    fake.push(call("put", path="a.py", content="a\n"))
    fake.push(call("put", path="b.py", content="b\n"))
    fake.push({"text": "ok"})
    rt = runtime_with(app, put)
    await rt.run(TurnRequest(prompt="go", agent="craftsman", mode="autopilot"), BaseHost())
    assert "file 2" in tool_messages(fake.chat_requests()[2])[-1]["content"]
    assert not (app.root / "b.py").exists()


async def test_threshold_falls_back_to_settings(app, fake):
    write_agent(
        app.root,
        "builder",
        """
description: a craftsman without its own threshold
mode: primary
permission:
  edit: allow
""",
    )
    from ndomo.agents.loader import builtin_agents_dir

    text = (builtin_agents_dir() / "craftsman.md").read_text()
    # `threshold: true`: scoped, with the configured numbers (a property, not the name)
    text = text.replace(
        "threshold:\n  direct: 2\n  planned: 5\n  direct_lines: 50\n", "threshold: true\n"
    )
    assert "threshold: true\n" in text
    (app.root / ".ndomo" / "agents" / "craftsman.md").write_text(text)
    app.settings.threshold.direct = 0
    fake.push(call("put", path="a.py", content="a\n"))
    fake.push({"text": "ok"})
    rt = runtime_with(app, put)
    await rt.run(TurnRequest(prompt="go", agent="craftsman", mode="autopilot"), BaseHost())
    assert "file 1" in tool_messages(fake.chat_requests()[1])[-1]["content"]
    # an agent without threshold and not named craftsman is not scoped
    fake.push(call("put", path="x.py", content="x\n"))
    fake.push(call("put", path="y.py", content="y\n"))
    fake.push(call("put", path="z.py", content="z\n"))
    fake.push({"text": "ok"})
    summary = await rt.run(TurnRequest(prompt="go", agent="builder", mode="autopilot"), BaseHost())
    assert sorted(summary.modified) == ["x.py", "y.py", "z.py"]


async def _foreman_plans(app, fake, rt):
    fake.push(call("plan_create", title="Feature X", overview="two steps", slug="feature-x"))
    fake.push(
        call(
            "task_create_batch",
            plan_id="feature-x",
            tasks=[
                {"description": "core", "files": ["x1.py", "x2.py", "x3.py"], "agent": "craftsman"},
                {
                    "description": "docs",
                    "files": ["README.md"],
                    "agent": "craftsman",
                    "dependencies": [1],
                },
            ],
        )
    )
    fake.push({"text": "persisted; switch to craftsman"})
    summary = await rt.run(
        TurnRequest(prompt="plan feature x", agent="foreman", mode="discussion"), BaseHost()
    )
    assert summary.status == "done", summary
    return summary


async def test_state3_craftsman_executes_the_foremans_plan(app, fake):
    rt = runtime_with(app, put)
    await _foreman_plans(app, fake, rt)
    states = watch(rt)
    fake.push(call("task_next_for_agent"))
    for n in ("x1.py", "x2.py", "x3.py"):
        fake.push(call("put", path=n, content=n))
    fake.push(call("task_update_status", id=1, status="done", result="core done"))
    fake.push(call("task_next_for_agent"))
    fake.push(call("put", path="README.md", content="# x\n"))
    fake.push(call("task_update_status", id=2, status="done", result="docs done"))
    fake.push(call("plan_update_status", id="feature-x", status="completed"))
    fake.push({"text": "plan completed"})
    summary = await rt.run(
        TurnRequest(prompt="execute the plan", agent="craftsman", mode="autopilot"), BaseHost()
    )
    assert summary.status == "done", summary
    assert sorted(summary.modified) == ["README.md", "x1.py", "x2.py", "x3.py"]
    store = await app.store()
    plan = await store.get_plan("feature-x")
    assert plan.status == "completed" and plan.archived_at
    assert [t.status for t in plan.tasks] == ["done", "done"]
    assert plan.created_by_agent == "foreman"
    assert plan.executed_by_agent == "craftsman" and plan.executed_by_session == summary.session
    assert "craftsman: working on a plan task, 3 of 5 files changed" in states


async def test_state3_turn_started_on_a_task_id(app, fake):
    rt = runtime_with(app, put)
    await _foreman_plans(app, fake, rt)
    for n in ("x1.py", "x2.py", "x3.py"):
        fake.push(call("put", path=n, content=n))
    fake.push(call("task_update_status", id=1, status="done", result="ok"))
    fake.push({"text": "task 1 done"})
    summary = await rt.run(
        TurnRequest(prompt="go", agent="craftsman", mode="autopilot", task_id="1"), BaseHost()
    )
    assert summary.status == "done", summary
    first = next(
        r["body"]["messages"]
        for r in fake.chat_requests()
        if r["body"]["messages"][-1]["role"] == "user"
        and r["body"]["messages"][-1]["content"].startswith("go")
    )
    # the task binding is per-turn context: in the user message, not the cached system prompt
    assert (
        "executing task 1" in first[-1]["content"] and "x1.py, x2.py, x3.py" in first[-1]["content"]
    )
    assert "executing task" not in first[0]["content"]
    store = await app.store()
    plan = await store.get_plan("feature-x")
    assert plan.status == "executing" and plan.executed_by_agent == "craftsman"
    assert plan.executed_by_session == summary.session
    assert [t.status for t in plan.tasks] == ["done", "pending"]


async def test_task_id_with_too_many_files_is_state4_up_front(app, fake):
    rt = runtime_with(app, put)
    store = await app.store()
    from ndomo.store.models import PlanCreate

    plan = await store.create_plan(
        PlanCreate(title="Huge", overview="x", created_by_agent="foreman")
    )
    await store.create_tasks(
        plan.id,
        [{"description": "all", "agent": "craftsman", "files": [f"m{i}.py" for i in range(6)]}],
    )
    summary = await rt.run(
        TurnRequest(prompt="go", agent="craftsman", mode="autopilot", task_id="1"), BaseHost()
    )
    assert summary.status == "blocked" and "foreman" in summary.handback
    assert fake.chat_requests() == []
    task = await store.get_task(1)
    assert task.status == "blocked" and "foreman" in task.error


async def test_unknown_task_id_fails_readably(app, fake):
    rt = runtime_with(app, put)
    summary = await rt.run(
        TurnRequest(prompt="go", agent="craftsman", mode="autopilot", task_id="99"), BaseHost()
    )
    assert summary.status == "failed" and "99" in summary.error


async def test_task_the_turn_ran_on_is_not_left_running(app, fake):
    """The model never calls task_update_status: the finished turn still closes its task."""
    rt = runtime_with(app, put)
    await _foreman_plans(app, fake, rt)
    fake.push(call("put", path="x1.py", content="x1"))
    fake.push({"text": "core is in"})
    summary = await rt.run(
        TurnRequest(prompt="go", agent="craftsman", mode="autopilot", task_id="1"), BaseHost()
    )
    assert summary.status == "done", summary
    store = await app.store()
    task = await store.get_task(1)
    assert task.status == "done" and "core is in" in (task.result or "")
