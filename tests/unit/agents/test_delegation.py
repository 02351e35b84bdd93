"""`task` delegation: the caller's task map, nested turns, intersected permissions, depth."""

from __future__ import annotations

from ndomo.runtime.context import TurnRequest
from ndomo.runtime.host import BaseHost

from .conftest import call, offered, runtime_with, tool_messages, write_agent


async def test_foreman_cannot_reach_go_smith(app, fake):
    fake.push(call("task", agent="go-smith", prompt="write main.go"))
    fake.push({"text": "ok"})
    rt = runtime_with(app)
    await rt.run(TurnRequest(prompt="go", agent="foreman", mode="discussion"), BaseHost())
    msg = tool_messages(fake.chat_requests()[1])[0]["content"]
    assert "permission denied" in msg and "go-smith" in msg
    assert len(fake.chat_requests()) == 2  # no nested turn was started


async def test_foreman_delegates_to_scout(app, fake):
    fake.push(call("task", agent="scout", prompt="map the repo"))
    fake.push({"text": "three python files"})  # scout's nested turn
    fake.push({"text": "noted"})
    rt = runtime_with(app)
    summary = await rt.run(
        TurnRequest(prompt="plan", agent="foreman", mode="discussion"), BaseHost()
    )
    assert summary.status == "done"
    reqs = fake.chat_requests()
    assert "Scout" in reqs[1]["body"]["messages"][0]["content"]
    assert "bash" not in offered(reqs[1]) and "task" not in offered(reqs[1])
    assert tool_messages(reqs[2])[0]["content"] == "three python files"
    store = await app.store()
    turns = await store._all("SELECT id, parent_turn_id, agent, mode FROM turns ORDER BY id")
    assert [(r["agent"], r["mode"]) for r in turns] == [
        ("foreman", "discussion"),
        ("scout", "discussion"),
    ]
    assert turns[1]["parent_turn_id"] == turns[0]["id"] == summary.turn_id


async def test_subagent_cannot_exceed_its_caller(app, fake):
    write_agent(
        app.root,
        "boss",
        """
description: careful caller
mode: primary
permission:
  bash:
    "*": ask
    "rm *": deny
  task:
    yolo: allow
""",
    )
    write_agent(
        app.root,
        "yolo",
        """
description: reckless helper
mode: subagent
permission:
  edit: allow
  bash:
    "*": allow
""",
    )
    (app.root / "precious").write_text("keep me")
    fake.push(call("task", agent="yolo", prompt="clean up"))
    fake.push(call("bash", command="rm precious"))  # yolo
    fake.push(call("bash", command="echo hello"))  # yolo: caller asks, no user → refused
    fake.push({"text": "could not"})  # yolo's answer
    fake.push({"text": "ok"})  # boss
    rt = runtime_with(app)
    summary = await rt.run(TurnRequest(prompt="go", agent="boss", mode="autopilot"), BaseHost())
    assert summary.status == "done"
    msgs = tool_messages(fake.chat_requests()[3])
    assert "permission denied" in msgs[0]["content"]
    assert "did not approve" in msgs[1]["content"]
    assert (app.root / "precious").read_text() == "keep me"
    assert tool_messages(fake.chat_requests()[4])[0]["content"].startswith("could not")


async def test_delegation_depth_is_capped(app, fake):
    for name in ("l1", "l2", "l3", "l4"):
        write_agent(
            app.root,
            name,
            f"""
description: level {name}
mode: all
permission:
  task:
    "l*": allow
""",
        )
    for nxt in ("l1", "l2", "l3", "l4"):
        fake.push(call("task", agent=nxt, prompt="deeper"))
    fake.push({"text": "l3 stops"})
    fake.push({"text": "l2 ok"})
    fake.push({"text": "l1 ok"})
    fake.push({"text": "top ok"})
    write_agent(
        app.root,
        "top",
        """
description: top
mode: primary
permission:
  task:
    "l*": allow
""",
    )
    rt = runtime_with(app)
    summary = await rt.run(TurnRequest(prompt="go", agent="top", mode="discussion"), BaseHost())
    assert summary.status == "done"
    msgs = tool_messages(fake.chat_requests()[4])
    assert "too deep" in msgs[0]["content"]
    store = await app.store()
    rows = await store._all("SELECT agent FROM turns ORDER BY id")
    assert [r["agent"] for r in rows] == ["top", "l1", "l2", "l3"]


async def test_primary_agent_is_not_a_subagent(app, fake):
    write_agent(
        app.root,
        "caller",
        """
description: c
mode: primary
permission:
  task:
    "*": allow
""",
    )
    fake.push(call("task", agent="craftsman", prompt="build"))
    fake.push(call("task", agent="nobody", prompt="build"))
    fake.push({"text": "ok"})
    rt = runtime_with(app)
    await rt.run(TurnRequest(prompt="go", agent="caller", mode="discussion"), BaseHost())
    msgs = tool_messages(fake.chat_requests()[2])
    assert "primary agent" in msgs[0]["content"] and "unknown agent 'nobody'" in msgs[1]["content"]
