"""MCP servers in one process: started with the session's first turn, tool lists cached,
deferred behind mcp_search past the budget (health says so), stopped with the App."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ndomo import compose
from ndomo.config import Settings
from ndomo.runtime.context import TurnRequest
from ndomo.runtime.host import ApprovalRequest, BaseHost
from ndomo.runtime.runtime import Runtime
from ndomo.runtime.tools import AllowAll
from ndomo.tools.mcp.actions import servers_of
from ndomo.tools.mcp.catalog import McpCatalog

PROBE = str(Path(__file__).resolve().parents[1] / "fakes" / "mcp_probe.py")


def runtime(app):
    plugins = compose.plugins()
    plugins.tools.policy = AllowAll()  # the fence and the catalog are judged here
    return Runtime(app, plugins)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return (
        Path(f"/proc/{pid}").exists()
        and "Z" not in Path(f"/proc/{pid}/stat").read_text().split()[2]
    )


async def test_servers_start_once_and_stop_with_the_app(app, fake, tmp_path) -> None:
    servers = {"probe": {"command": sys.executable, "args": [PROBE, "--tools", "40"]}}
    app.settings = Settings.model_validate(
        {**app.settings.model_dump(), "mcp": {"servers": servers}}
    )
    app.settings.model.context_window = 8192
    rt = runtime(app)
    fake.push({"tool_calls": [{"name": "mcp_search", "arguments": {"query": "echo"}}]})
    fake.push({"tool_calls": [{"name": "mcp__probe__echo", "arguments": {"text": "one"}}]})
    fake.push({"text": "done"})
    first = await rt.run(TurnRequest(prompt="go", mode="autopilot"))
    assert first.status == "done", first
    cat = app.existing(McpCatalog)
    assert cat is not None
    server = cat.servers["probe"]
    conn = server.connection
    assert conn is not None and conn.starts == 1 and server.state == "ready"
    tools = [m for m in fake.chat_requests()[-1]["body"]["messages"] if m["role"] == "tool"]
    assert tools[-1]["content"].startswith("echo: one")

    report = await servers_of(app)
    assert report.deferred is True
    (info,) = report.servers
    assert (
        info.state == "ready"
        and info.tools == len(server.tools) > 40
        and info.source == "user config"
    )

    # a second turn: the same process, no second start, the cached list
    fake.push({"tool_calls": [{"name": "mcp_search", "arguments": {"query": "echo"}}]})
    fake.push({"tool_calls": [{"name": "mcp__probe__echo", "arguments": {"text": "two"}}]})
    fake.push({"text": "done"})
    await rt.run(TurnRequest(prompt="again", mode="autopilot"))
    assert conn.starts == 1
    tools = [m for m in fake.chat_requests()[-1]["body"]["messages"] if m["role"] == "tool"]
    assert tools[-1]["content"].startswith("echo: two")

    pids = [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()]
    children = [pid for pid in pids if _cmdline(pid).endswith(f"{PROBE}\x00--tools\x0040\x00")]
    assert children, "the server runs while the App lives"
    await app.aclose()
    assert not any(_alive(pid) for pid in children), "stopped with the App"


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text()
    except OSError:
        return ""


async def test_a_changed_tool_list_is_listed_again_before_the_next_turn(app, fake) -> None:
    servers = {"probe": {"command": sys.executable, "args": [PROBE]}}
    app.settings = Settings.model_validate(
        {**app.settings.model_dump(), "mcp": {"servers": servers}}
    )
    rt = runtime(app)
    fake.push({"tool_calls": [{"name": "mcp__probe__grow", "arguments": {}}]})
    fake.push({"text": "done"})
    turn = await rt.run(TurnRequest(prompt="go", mode="autopilot"))
    assert turn.status == "done", turn
    first = [t["function"]["name"] for t in fake.chat_requests()[0]["body"]["tools"]]
    assert "mcp__probe__grow" in first and "mcp__probe__grown" not in first
    fake.push({"tool_calls": [{"name": "mcp__probe__grown", "arguments": {}}]})
    fake.push({"text": "done"})
    await rt.run(TurnRequest(prompt="again", mode="autopilot"))
    offered = [t["function"]["name"] for t in fake.chat_requests()[2]["body"]["tools"]]
    assert "mcp__probe__grown" in offered
    tools = [m for m in fake.chat_requests()[-1]["body"]["messages"] if m["role"] == "tool"]
    assert tools[-1]["content"] == "grown answers"
    conn = app.existing(McpCatalog).servers["probe"].connection  # type: ignore[union-attr]
    assert conn is not None and conn.starts == 1  # listed again, not restarted


class Recording(BaseHost):
    def __init__(self, answer: str) -> None:
        super().__init__()
        self.answer = answer
        self.asked: list[ApprovalRequest] = []

    async def approve(self, request: ApprovalRequest):  # type: ignore[override]
        self.asked.append(request)
        return self.answer


async def test_the_agents_mcp_permission_asks_by_server_and_tool(app, fake) -> None:
    servers = {"probe": {"command": sys.executable, "args": [PROBE]}}
    app.settings = Settings.model_validate(
        {**app.settings.model_dump(), "mcp": {"servers": servers}}
    )
    rt = Runtime(app, compose.plugins())  # the agents' own policy
    host = Recording("deny")
    fake.push(
        {
            "tool_calls": [
                {"name": "mcp__probe__write_note", "arguments": {"name": "n", "text": "x"}}
            ]
        }
    )
    fake.push({"text": "done"})
    await rt.run(TurnRequest(prompt="go", mode="autopilot"), host)
    (asked,) = host.asked
    assert asked.permission == "mcp" and asked.subject == "probe/write_note"
    tools = [m for m in fake.chat_requests()[-1]["body"]["messages"] if m["role"] == "tool"]
    assert "did not approve mcp 'probe/write_note'" in tools[-1]["content"]
    assert not (app.root / "n").exists()


async def test_a_server_that_failed_to_start_is_tried_again_next_turn(app, fake) -> None:
    gate = app.root / "ready"
    line = f'test -f "{gate}" && exec "{sys.executable}" "{PROBE}"'
    servers = {"probe": {"command": "sh", "args": ["-c", line]}}
    app.settings = Settings.model_validate(
        {**app.settings.model_dump(), "mcp": {"servers": servers}}
    )
    rt = runtime(app)
    fake.push({"text": "no tools yet"})
    turn = await rt.run(TurnRequest(prompt="go", mode="autopilot"))
    assert turn.status == "done", turn
    (info,) = (await servers_of(app)).servers
    assert info.state == "failed" and "did not start" in info.error
    offered = [t["function"]["name"] for t in fake.chat_requests()[0]["body"]["tools"]]
    assert not any(n.startswith("mcp__") for n in offered)
    gate.write_text("")
    fake.push({"tool_calls": [{"name": "mcp__probe__echo", "arguments": {"text": "up"}}]})
    fake.push({"text": "done"})
    await rt.run(TurnRequest(prompt="again", mode="autopilot"))
    tools = [m for m in fake.chat_requests()[-1]["body"]["messages"] if m["role"] == "tool"]
    assert tools[-1]["content"].startswith("echo: up")


async def test_a_server_that_cannot_start_says_why(app, fake) -> None:
    line = "echo 'cannot find my database' >&2; exit 3"
    servers = {"broken": {"command": "sh", "args": ["-c", line]}}
    app.settings = Settings.model_validate(
        {**app.settings.model_dump(), "mcp": {"servers": servers}}
    )
    fake.push({"text": "fine"})
    summary = await runtime(app).run(TurnRequest(prompt="go", mode="autopilot"))
    assert summary.status == "done"  # the turn goes on without the server
    (info,) = (await servers_of(app)).servers
    assert info.state == "failed" and "cannot find my database" in info.error


async def test_a_servers_tools_list_narrows_what_is_offered(app, fake) -> None:
    servers = {"probe": {"command": sys.executable, "args": [PROBE], "tools": ["ech*"]}}
    app.settings = Settings.model_validate(
        {**app.settings.model_dump(), "mcp": {"servers": servers}}
    )
    fake.push(
        {
            "tool_calls": [
                {"name": "mcp__probe__write_note", "arguments": {"name": "n", "text": "x"}}
            ]
        }
    )
    fake.push({"text": "done"})
    await runtime(app).run(TurnRequest(prompt="go", mode="autopilot"))
    offered = [t["function"]["name"] for t in fake.chat_requests()[0]["body"]["tools"]]
    assert [n for n in offered if n.startswith("mcp__")] == ["mcp__probe__echo"]
    tools = [m for m in fake.chat_requests()[-1]["body"]["messages"] if m["role"] == "tool"]
    assert "unknown tool" in tools[-1]["content"] and not (app.root / "n").exists()


async def test_servers_an_editor_passes_for_its_session(app, fake) -> None:
    from ndomo.config import McpServerConfig
    from ndomo.tools.mcp.catalog import catalog_for

    config = McpServerConfig(command=sys.executable, args=[PROBE])
    catalog_for(app).add_client_servers({"probe": config})
    fake.push({"tool_calls": [{"name": "mcp__probe__echo", "arguments": {"text": "acp"}}]})
    fake.push({"text": "done"})
    await runtime(app).run(TurnRequest(prompt="go", mode="autopilot"))
    tools = [m for m in fake.chat_requests()[-1]["body"]["messages"] if m["role"] == "tool"]
    assert tools[-1]["content"].startswith("echo: acp")
    (info,) = (await servers_of(app)).servers
    assert info.source == "editor" and info.state == "ready"


async def test_a_refused_project_server_starts_once_approved_elsewhere(app, fake) -> None:
    import json

    from ndomo.tools.mcp.sources import approve, discover

    marker = app.root / "started"
    server = {"command": sys.executable, "args": [PROBE, "--marker", str(marker)]}
    (app.root / ".mcp.json").write_text(json.dumps({"mcpServers": {"probe": server}}))
    rt = Runtime(app, compose.plugins())
    host = Recording("deny")  # the user says no to starting it
    fake.push({"text": "no server"})
    await rt.run(TurnRequest(prompt="go", mode="autopilot"), host)
    (asked,) = host.asked
    assert asked.permission == "mcp_server" and PROBE in asked.subject
    assert not marker.exists()
    (info,) = (await servers_of(app)).servers
    assert info.state == "refused" and info.approved == "not approved"

    (spec,), _ = discover(app)
    approve(app.root, spec)  # `ndomo mcp approve --name probe` from another process
    fake.push({"text": "now"})
    await rt.run(TurnRequest(prompt="again", mode="autopilot"), host)
    assert marker.exists() and len(host.asked) == 1  # started, not asked again


async def test_a_project_server_revoked_elsewhere_stops_before_the_next_turn(app, fake) -> None:
    import json

    from ndomo.tools.mcp.sources import approve, discover, revoke

    server = {"command": sys.executable, "args": [PROBE, "--tools", "3"]}
    (app.root / ".mcp.json").write_text(json.dumps({"mcpServers": {"probe": server}}))
    (spec,), _ = discover(app)
    approve(app.root, spec)  # `ndomo mcp approve --name probe`
    rt = Runtime(app, compose.plugins())
    host = Recording("deny")  # asked again after the revoke: the user says no
    fake.push({"text": "with the server"})
    await rt.run(TurnRequest(prompt="go", mode="autopilot"), host)
    offered = {t["function"]["name"] for t in fake.chat_requests()[-1]["body"]["tools"]}
    assert "mcp__probe__echo" in offered and host.asked == []
    pid = next(
        int(p.name)
        for p in Path("/proc").iterdir()
        if p.name.isdigit() and _cmdline(int(p.name)).endswith(f"{PROBE}\x00--tools\x003\x00")
    )

    assert revoke(app.root, "probe")  # `ndomo mcp revoke --name probe` from another process
    fake.push({"text": "without it"})
    await rt.run(TurnRequest(prompt="again", mode="autopilot"), host)
    offered = {t["function"]["name"] for t in fake.chat_requests()[-1]["body"]["tools"]}
    assert not any(n.startswith("mcp__") for n in offered)
    (asked,) = host.asked  # asked again, like a server never approved
    assert asked.permission == "mcp_server"
    assert not _alive(pid), "the revoked server's process still runs"
    await app.aclose()


async def test_a_call_past_its_timeout_is_a_tool_error_and_the_next_call_works(app, fake) -> None:
    servers = {"probe": {"command": sys.executable, "args": [PROBE], "timeout_s": 1}}
    app.settings = Settings.model_validate(
        {**app.settings.model_dump(), "mcp": {"servers": servers}}
    )
    fake.push({"tool_calls": [{"name": "mcp__probe__hang", "arguments": {"seconds": 30}}]})
    fake.push({"tool_calls": [{"name": "mcp__probe__echo", "arguments": {"text": "next"}}]})
    fake.push({"text": "done"})
    summary = await runtime(app).run(TurnRequest(prompt="go", mode="autopilot"))
    assert summary.status == "done"
    tools = [
        m["content"] for m in fake.chat_requests()[-1]["body"]["messages"] if m["role"] == "tool"
    ]
    assert "failed during 'hang': no answer within 1 s" in tools[0]
    assert tools[1].startswith("echo: next")
    conn = app.existing(McpCatalog).servers["probe"].connection  # type: ignore[union-attr]
    assert conn is not None and conn.starts == 2  # the hung one was stopped, a new one started


async def test_output_is_capped_and_the_cut_is_said(app, fake) -> None:
    servers = {"probe": {"command": sys.executable, "args": [PROBE]}}
    app.settings = Settings.model_validate(
        {**app.settings.model_dump(), "mcp": {"servers": servers, "output_cap": 1000}}
    )
    fake.push({"tool_calls": [{"name": "mcp__probe__echo", "arguments": {"text": "x" * 5000}}]})
    fake.push({"text": "done"})
    await runtime(app).run(TurnRequest(prompt="go", mode="autopilot"))
    tools = [
        m["content"] for m in fake.chat_requests()[-1]["body"]["messages"] if m["role"] == "tool"
    ]
    assert "(output truncated: 4006 characters after the first 1000 not shown)" in tools[0]
    assert tools[0].startswith("echo: xxx") and tools[0].count("x") < 1100
