"""AgentPolicy: agent permission → saved approvals → ask the Host; secret files ask."""

from __future__ import annotations

from ndomo.agents.policy import glob_escape, is_flat_deny
from ndomo.agents.schema import AgentPermission
from ndomo.runtime.context import TurnRequest
from ndomo.runtime.host import BaseHost

from .conftest import call, offered, peek, put, runtime_with, tool_messages, write_agent


class ApprovingHost(BaseHost):
    def __init__(self, answer):
        super().__init__()
        self.answer = answer
        self.asked = []

    async def approve(self, request):
        self.asked.append(request)
        return self.answer


ASKER = """
description: asks for edits
mode: primary
permission:
  edit: ask
  bash:
    "*": ask
    "rm *": deny
"""


async def test_foreman_bash_is_hidden_and_refused(app, fake):
    fake.push(call("bash", command="ls"))
    fake.push({"text": "ok"})
    rt = runtime_with(app)
    await rt.run(TurnRequest(prompt="list", agent="foreman", mode="autopilot"), BaseHost())
    first, second = fake.chat_requests()
    assert "bash" not in offered(first) and "task" in offered(first)
    assert "permission denied" in tool_messages(second)[0]["content"]


async def test_ask_denied_by_a_host_without_user(app, fake):
    write_agent(app.root, "asker", ASKER)
    fake.push(call("put", path="a.txt", content="x"))
    fake.push({"text": "ok"})
    rt = runtime_with(app, put)
    await rt.run(TurnRequest(prompt="go", agent="asker", mode="autopilot"), BaseHost())
    assert "did not approve" in tool_messages(fake.chat_requests()[1])[0]["content"]
    assert not (app.root / "a.txt").exists()


async def test_once_allows_one_call_and_saves_nothing(app, fake):
    write_agent(app.root, "asker", ASKER)
    fake.push(call("put", path="a.txt", content="x"))
    fake.push({"text": "ok"})
    host = ApprovingHost("once")
    rt = runtime_with(app, put)
    await rt.run(TurnRequest(prompt="go", agent="asker", mode="autopilot"), host)
    assert (app.root / "a.txt").read_text() == "x"
    assert host.asked[0].permission == "edit" and host.asked[0].subject == "a.txt"
    store = await app.store()
    assert await store.list_approvals() == []


async def test_session_approval_is_saved_for_the_exact_subject(app, fake):
    write_agent(app.root, "asker", ASKER)
    fake.push(call("put", path="a[1]*.txt", content="x"))
    fake.push(call("put", path="a[1]*.txt", content="y"))
    fake.push(call("put", path="a1zz.txt", content="z"))
    fake.push({"text": "ok"})
    host = ApprovingHost("session")
    rt = runtime_with(app, put)
    summary = await rt.run(TurnRequest(prompt="go", agent="asker", mode="autopilot"), host)
    assert (app.root / "a[1]*.txt").read_text() == "y"
    # asked once for the first subject, once for the other (no glob widening)
    assert [r.subject for r in host.asked] == ["a[1]*.txt", "a1zz.txt"]
    store = await app.store()
    rules = await store.list_approvals(summary.session)
    assert rules[0].scope == "session" and rules[0].pattern == glob_escape("a[1]*.txt")


async def test_project_approval_and_saved_deny(app, fake):
    write_agent(app.root, "asker", ASKER)
    store = await app.store()
    await store.save_approval("edit", "blocked.txt", "deny", scope="project")
    fake.push(call("put", path="blocked.txt", content="x"))
    fake.push(call("put", path="ok.txt", content="x"))
    fake.push({"text": "ok"})
    host = ApprovingHost("project")
    rt = runtime_with(app, put)
    await rt.run(TurnRequest(prompt="go", agent="asker", mode="autopilot"), host)
    assert "saved rule" in tool_messages(fake.chat_requests()[1])[0]["content"]
    assert not (app.root / "blocked.txt").exists() and (app.root / "ok.txt").exists()
    assert [r.subject for r in host.asked] == ["ok.txt"]
    assert any(r.scope == "project" and r.pattern == "ok.txt" for r in await store.list_approvals())


async def test_saved_deny_beats_an_agent_allow(app, fake):
    store = await app.store()
    await store.save_approval("edit", "*.lock", "deny", scope="project")
    fake.push(call("put", path="poetry.lock", content="x"))
    fake.push({"text": "ok"})
    rt = runtime_with(app, put)
    await rt.run(TurnRequest(prompt="go", agent="craftsman", mode="autopilot"), BaseHost())
    assert not (app.root / "poetry.lock").exists()


async def test_bash_deny_rule_and_ask_reason(app, fake):
    write_agent(app.root, "asker", ASKER)
    (app.root / "keep").write_text("k")
    fake.push(call("bash", command="rm keep"))
    fake.push(call("bash", command="echo hi"))
    fake.push({"text": "ok"})
    host = ApprovingHost("deny")
    rt = runtime_with(app)
    await rt.run(TurnRequest(prompt="go", agent="asker", mode="autopilot"), host)
    msgs = tool_messages(fake.chat_requests()[2])
    assert "permission denied" in msgs[0]["content"] and (app.root / "keep").exists()
    assert [r.subject for r in host.asked] == ["echo hi"] and host.asked[0].permission == "bash"


async def test_secret_file_read_asks(app, fake):
    (app.root / ".env").write_text("TOKEN=1")
    fake.push(call("peek", path=".env"))
    fake.push(call("peek", path="README.md"))
    fake.push({"text": "ok"})
    host = ApprovingHost("deny")
    rt = runtime_with(app, peek)
    await rt.run(TurnRequest(prompt="go", agent="craftsman", mode="autopilot"), host)
    msgs = tool_messages(fake.chat_requests()[2])
    assert "did not approve" in msgs[0]["content"] and "TOKEN" not in msgs[0]["content"]
    assert msgs[1]["content"] == "(absent)"
    assert [(r.permission, r.subject) for r in host.asked] == [("secret", ".env")]


def test_flat_deny():
    assert is_flat_deny(AgentPermission(bash="deny"), "bash")
    assert is_flat_deny(AgentPermission(bash={"*": "deny"}), "bash")
    assert not is_flat_deny(AgentPermission(bash={"*": "deny", "pwd": "allow"}), "bash")
    assert is_flat_deny(AgentPermission(task="deny"), "task")
    assert not is_flat_deny(AgentPermission(task={"scout": "allow"}), "task")
    assert is_flat_deny(AgentPermission(edit="deny"), "edit")
    assert not is_flat_deny(AgentPermission(edit="ask"), "edit")
    assert not is_flat_deny(AgentPermission(), None)


async def test_serve_list_starts_nothing_so_needs_no_bash_approval(app, fake):
    """`serve list`/`stop` declare no command: allowed even where bash would ask or deny."""
    from ndomo.runtime.context import TurnRequest
    from ndomo.runtime.host import BaseHost
    from tests.unit.agents.conftest import call, runtime_with

    fake.push(call("serve", action="list"))
    fake.push(call("serve", action="start", static_dir="."))
    fake.push({"text": "ok"})
    rt = runtime_with(app)
    await rt.run(TurnRequest(prompt="servers?", agent="craftsman", mode="autopilot"), BaseHost())
    tools = [m for m in fake.chat_requests()[1]["body"]["messages"] if m["role"] == "tool"]
    assert tools[0]["content"] == "nothing is being served in this session"
    # starting one runs a command: the craftsman's bash "*" asks, and no user → refused
    tools = [m for m in fake.chat_requests()[2]["body"]["messages"] if m["role"] == "tool"]
    assert tools[-1]["content"].startswith("the user did not approve bash 'python3 -m http.server")
