"""`agents.list`, a malformed agent file in `health`, and routing through the real plan tool."""

from __future__ import annotations

from ndomo import compose
from ndomo.runtime.context import TurnRequest
from ndomo.runtime.host import BaseHost

from .conftest import call, runtime_with, write_agent


async def test_agents_list_summarises_agents_and_problems(app):
    write_agent(
        app.root,
        "helper",
        """
description: project helper
mode: subagent
permission:
  bash:
    "*": ask
    "make test": allow
""",
    )
    bad = app.root / ".ndomo" / "agents" / "broken.md"
    bad.write_text("---\ndescription: x\npermision:\n  edit: allow\n---\nbody\n")
    result = await compose.actions().get("agents.list").invoke(app, {})
    by_name = {a["name"]: a for a in result["agents"]}
    assert "broken" not in by_name and len(by_name) == 17
    foreman = by_name["foreman"]
    assert foreman["mode"] == "primary" and foreman["default_mode"] == "discussion"
    assert foreman["source"] == "builtin" and foreman["permissions"]["bash"] == "deny"
    assert foreman["permissions"]["task"].startswith("allow scout, scribe, sage, guild")
    assert by_name["craftsman"]["threshold"] == {"direct": 2, "planned": 5, "direct_lines": 50}
    assert foreman["writes"] == "design" and by_name["craftsman"]["writes"] == "any"
    helper = by_name["helper"]
    assert (
        helper["source"] == "project"
        and helper["permissions"]["bash"] == "ask by default; 1 allowed, 0 denied patterns"
    )
    [problem] = result["problems"]
    assert (
        problem["path"].endswith("broken.md")
        and "permision" in problem["message"]
        and problem["line"] == 2
    )
    text = compose.actions().get("agents.list").render(result)
    assert "broken.md:3" in text and "helper" in text


async def test_malformed_agent_file_health_names_it_and_others_work(app, fake):
    (app.root / ".ndomo" / "agents").mkdir(parents=True)
    (app.root / ".ndomo" / "agents" / "scout.md").write_text("---\nmode: sideways\n---\n")
    health = await compose.actions().get("health").invoke(app, {})
    problems = health["agents"]["problems"]
    assert problems and all(p["path"].endswith("scout.md") for p in problems)
    assert any("mode" in p["message"] for p in problems)
    # the built-in scout still loads and the foreman still delegates to it
    fake.push(call("task", agent="scout", prompt="look"))
    fake.push({"text": "looked"})
    fake.push({"text": "ok"})
    rt = runtime_with(app)
    summary = await rt.run(TurnRequest(prompt="go", agent="foreman", mode="discussion"), BaseHost())
    assert (
        summary.status == "done"
        and "Scout" in fake.chat_requests()[1]["body"]["messages"][0]["content"]
    )


async def _batch(app, fake, agent, mode, tasks):
    fake.push(call("plan_create", title=f"p {agent}", overview="o", slug=f"p-{agent}"))
    fake.push(call("task_create_batch", plan_id=f"p-{agent}", tasks=tasks))
    fake.push({"text": "ok"})
    rt = runtime_with(app)
    await rt.run(TurnRequest(prompt="plan", agent=agent, mode=mode), BaseHost())
    store = await app.store()
    return [(t.agent, t.files) for t in (await store.get_plan(f"p-{agent}")).tasks]


async def test_task_create_batch_routes_and_splits(app, fake):
    tasks = [
        {
            "description": "api and ui",
            "files": ["api/h.go", "web/App.vue", "web/main.ts", "Makefile"],
        },
        {
            "description": "design",
            "files": ["web/Nav.vue"],
            "metadata": {"stack": "vue", "type": "design"},
        },
        {"description": "py override", "files": ["x.rs"], "metadata": {"stack": "python"}},
        {"description": "mine", "files": ["a.py"], "agent": "craftsman"},
    ]
    assert await _batch(app, fake, "craftsman", "autopilot", tasks) == [
        ("go-smith", ["api/h.go", "Makefile"]),
        ("vue-smith", ["web/App.vue"]),
        ("js-smith", ["web/main.ts"]),
        ("painter", ["web/Nav.vue"]),
        ("python-smith", ["x.rs"]),
        ("craftsman", ["a.py"]),
    ]
    # the foreman never gets the painter
    routed = await _batch(app, fake, "foreman", "discussion", tasks[1:2])
    assert routed == [("vue-smith", ["web/Nav.vue"])]
