"""Agent contracts in code (issue 14): the foreman plans in every mode (`writes: design`);
the craftsman's State 1 is bounded by changed lines and by one stack; a turn ending in
State 4 abandons the draft plan it created. Real store, fake model, the real file tools."""

from __future__ import annotations

import pytest

from ndomo.runtime.context import TurnRequest
from ndomo.runtime.host import BaseHost

from .conftest import call, put, runtime_with, tool_messages, write_agent


def _results(fake) -> list[str]:
    return [tool_messages(r)[-1]["content"] for r in fake.chat_requests()[1:]]


async def _turn(app, fake, calls, *, agent="craftsman", mode="autopilot", prompt="go"):
    for c in calls:
        fake.push(c)
    fake.push({"text": "ok"})
    rt = runtime_with(app, put)
    return await rt.run(TurnRequest(prompt=prompt, agent=agent, mode=mode), BaseHost())


def _lines(n: int, tag: str = "x") -> str:
    return "".join(f"{tag}{i} = {i}\n" for i in range(n))


# -- the foreman is a planner in every mode ---------------------------------------------------


@pytest.mark.parametrize("mode", ["discussion", "brainstorming", "autopilot"])
async def test_foreman_never_writes_code_in_any_mode(app, fake, mode):
    (app.root / "src").mkdir()
    (app.root / "src/app.py").write_text("x = 1\n")
    await _turn(
        app,
        fake,
        [
            call("write", path="src/app.py", content="x = 2\n"),
            call("edit", path="src/app.py", old_text="x = 1", new_text="x = 3"),
            call("write", path="docs/design.md", content="# design\n"),
            call("plan_create", title="Bump x", overview="x to 2", slug="bump-x"),
        ],
        agent="foreman",
        mode=mode,
    )
    results = _results(fake)
    for refused in results[:2]:
        if mode == "discussion":  # the mode's own rule speaks first
            assert "design artifacts" in refused, refused
        else:
            assert (
                "foreman plans" in refused and "craftsman" in refused and "src/app.py" in refused
            ), refused
    assert (app.root / "src/app.py").read_text() == "x = 1\n"
    assert (app.root / "docs/design.md").read_text() == "# design\n", results[2]
    store = await app.store()
    assert [p.slug for p in await store.list_plans()] == ["bump-x"], results[3]


async def test_writes_design_is_a_frontmatter_field_not_a_name(app, fake):
    write_agent(
        app.root,
        "architect",
        """
description: designs
mode: primary
writes: design
permission:
  edit: allow
  write: allow
  bash: allow
""",
    )
    await _turn(
        app,
        fake,
        [
            call("write", path="tools.md/evil.py", content="import os\n"),
            call("put", path="lib.rs", content="fn main() {}\n"),
            call("bash", command="echo hi > src.py"),
            call("write", path="notes/idea.md", content="idea\n"),
        ],
        agent="architect",
    )
    results = _results(fake)
    assert all("architect plans" in r and "craftsman" in r for r in results[:3]), results
    assert not (app.root / "tools.md").exists() and not (app.root / "lib.rs").exists()
    assert not (app.root / "src.py").exists()
    assert (app.root / "notes/idea.md").read_text() == "idea\n"


async def test_an_agent_without_the_field_writes_code(app, fake):
    write_agent(
        app.root, "builder", "description: builds\nmode: primary\npermission:\n  write: allow\n"
    )
    await _turn(
        app, fake, [call("write", path="main.go", content="package main\n")], agent="builder"
    )
    assert (app.root / "main.go").read_text() == "package main\n", _results(fake)


async def test_a_sub_agent_of_a_planner_cannot_write_code_for_it(app, fake):
    write_agent(
        app.root,
        "planner",
        """
description: plans
mode: primary
writes: design
permission:
  task: {helper: allow}
""",
    )
    write_agent(
        app.root, "helper", "description: helps\nmode: subagent\npermission:\n  write: allow\n"
    )
    fake.push(call("task", agent="helper", prompt="write the code"))
    fake.push(call("write", path="app.py", content="x = 1\n"))  # inside the sub-turn
    fake.push({"text": "helper done"})
    fake.push({"text": "ok"})
    rt = runtime_with(app, put)
    await rt.run(TurnRequest(prompt="go", agent="planner", mode="autopilot"), BaseHost())
    refused = tool_messages(fake.chat_requests()[2])[-1]["content"]
    assert "planner plans" in refused, refused
    assert not (app.root / "app.py").exists()


# -- craftsman State 1: changed lines --------------------------------------------------------


def test_changed_lines_counts_a_rewritten_line_once():
    from ndomo.agents.scope import changed_lines

    assert changed_lines("a\nb\nc\n", "a\nB\nc\n") == 1
    assert changed_lines(None, _lines(7)) == 7
    assert changed_lines(_lines(7), None) == 7
    assert changed_lines("a\n", "a\n") == 0


async def test_state1_allows_50_changed_lines(app, fake):
    await _turn(app, fake, [call("write", path="a.py", content=_lines(50))])
    assert (app.root / "a.py").read_text() == _lines(50), _results(fake)


async def test_state1_refuses_51_changed_lines_until_a_plan_exists(app, fake):
    await _turn(
        app,
        fake,
        [
            call("write", path="a.py", content=_lines(51)),
            call("plan_create", title="Big a", overview="a.py grows", slug="big-a"),
            call(
                "task_create_batch",
                plan_id="big-a",
                tasks=[{"description": "write a", "files": ["a.py"], "agent": "craftsman"}],
            ),
            call("write", path="a.py", content=_lines(51)),
        ],
    )
    results = _results(fake)
    assert "51 changed lines" in results[0] and "plan_create" in results[0], results
    assert results[3] == "created a.py (51 lines)", results


async def test_state1_lines_add_up_over_edits_and_files(app, fake):
    (app.root / "a.py").write_text(_lines(40))
    await _turn(
        app,
        fake,
        [
            call(
                "edit", path="a.py", old_text="x0 = 0\nx1 = 1\n", new_text="y0 = 0\ny1 = 1\n"
            ),  # 2 lines
            call("write", path="b.py", content=_lines(48, "b")),  # 50 in all: allowed
            call("edit", path="a.py", old_text="x2 = 2\n", new_text="y2 = 2\n"),  # 51: refused
        ],
    )
    results = _results(fake)
    assert "51 changed lines" in results[2], results
    assert "x2 = 2" in (app.root / "a.py").read_text()


async def test_direct_lines_comes_from_the_threshold(app, fake):
    write_agent(
        app.root,
        "tiny",
        """
description: small fixes
mode: primary
threshold: {direct: 2, planned: 5, direct_lines: 3}
permission:
  write: allow
""",
    )
    await _turn(app, fake, [call("write", path="a.py", content=_lines(4))], agent="tiny")
    assert "4 changed lines" in _results(fake)[0] and "more than 3" in _results(fake)[0]
    assert not (app.root / "a.py").exists()


# -- craftsman State 1: one stack ------------------------------------------------------------


async def test_state1_work_across_two_stacks_needs_a_plan(app, fake):
    await _turn(
        app,
        fake,
        [
            call("write", path="api.py", content="x = 1\n"),
            call("write", path="README.md", content="# r\n"),  # not code: no stack, but 2 files
            call("write", path="web.ts", content="export {}\n"),
        ],
    )
    results = _results(fake)
    assert (app.root / "README.md").exists()
    assert "file 3" in results[2]  # the file limit speaks first


async def test_state1_second_stack_is_refused(app, fake):
    await _turn(
        app,
        fake,
        [
            call("write", path="api.py", content="x = 1\n"),
            call("write", path="web.ts", content="export {}\n"),
            call("plan_create", title="Both", overview="py and ts", slug="both"),
            call(
                "task_create_batch",
                plan_id="both",
                tasks=[{"description": "api and web", "files": ["api.py", "web.ts"]}],
            ),
            call("write", path="web.ts", content="export {}\n"),
        ],
    )
    results = _results(fake)
    assert "2 stacks (js, python)" in results[1] and "plan_create" in results[1], results
    assert results[4].startswith("created web.ts"), results


# -- State 4 abandons the turn's own draft ---------------------------------------------------


async def test_state4_abandons_the_draft_plan_the_turn_created(app, fake):
    store = await app.store()
    from ndomo.store.models import PlanCreate

    other = await store.create_plan(
        PlanCreate(
            title="Someone else's", overview="keep", slug="other", created_by_agent="craftsman"
        )
    )
    names = [f"f{i}.py" for i in range(6)]
    summary = await _turn(
        app,
        fake,
        [
            call("plan_create", title="Too big", overview="six files", slug="too-big"),
            call(
                "task_create_batch",
                plan_id="too-big",
                tasks=[{"description": "all", "files": names[:5]}],
            ),
            *[call("put", path=n, content="x\n") for n in names],
        ],
    )
    assert summary.status == "blocked" and "too-big" in summary.handback, summary.handback
    plan = await store.get_plan("too-big")
    assert plan.status == "abandoned"
    (entry,) = [a for a in plan.audit if a.to_status == "abandoned"]
    assert (
        entry.actor == "craftsman"
        and entry.from_status == "draft"
        and "State 4" in (entry.reason or "")
    )
    assert (await store.get_plan(other.id)).status == "draft"
    assert not any((app.root / n).exists() for n in names)


async def test_state4_leaves_a_plan_that_is_not_a_draft(app, fake):
    names = [f"f{i}.py" for i in range(6)]
    await _turn(
        app,
        fake,
        [
            call("plan_create", title="Moved on", overview="six files", slug="moved-on"),
            call(
                "task_create_batch",
                plan_id="moved-on",
                tasks=[{"description": "all", "files": names[:5]}],
            ),
            call("plan_update_status", id="moved-on", status="approved"),
            *[call("put", path=n, content="x\n") for n in names],
        ],
    )
    store = await app.store()
    assert (await store.get_plan("moved-on")).status == "approved"
