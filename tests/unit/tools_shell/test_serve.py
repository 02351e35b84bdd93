from __future__ import annotations

import asyncio
import urllib.request

from ndomo.tools.shell.processes import port_open
from tests.unit.tools_shell.conftest import alive


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as r:
        return r.read().decode()


async def test_serve_static_start_list_stop(make_ctx, tmp_path):
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "index.html").write_text("<h1>hello served</h1>")
    ctx = await make_ctx("autopilot")
    tools = ctx.runtime.plugins.tools
    res = await tools.execute(ctx, "serve", {"action": "start", "static_dir": "site"})
    assert res.ok, res.content
    port, url = res.data["port"], res.data["url"]
    assert url == f"http://127.0.0.1:{port}/" and "serving 'static'" in res.content
    assert "hello served" in await asyncio.to_thread(_get, url + "index.html")

    listed = await tools.execute(ctx, "serve", {"action": "list"})
    assert "static: running" in listed.content and listed.data["served"][0]["port"] == port
    again = await tools.execute(ctx, "serve", {"action": "start", "static_dir": "site"})
    assert again.status == "failed" and "already running" in again.content

    stopped = await tools.execute(ctx, "serve", {"action": "stop", "name": "static"})
    assert stopped.ok and "stopped 'static'" in stopped.content
    assert not await port_open(port)
    assert (
        "nothing is being served" in (await tools.execute(ctx, "serve", {"action": "list"})).content
    )


async def test_serve_command_gets_port_and_stops_on_app_close(make_ctx, app):
    ctx = await make_ctx("autopilot")
    cmd = "echo starting on $PORT; exec python3 -m http.server --bind $HOST $PORT"
    res = await ctx.runtime.plugins.tools.execute(
        ctx, "serve", {"action": "start", "command": cmd, "name": "dev"}
    )
    assert res.ok, res.content
    pid, port = res.data["pid"], res.data["port"]
    listed = await ctx.runtime.plugins.tools.execute(ctx, "serve", {"action": "list"})
    assert f"starting on {port}" in listed.content
    await app.aclose()
    assert not alive(pid)
    assert not await port_open(port)


async def test_serve_failures_are_readable(make_ctx):
    ctx = await make_ctx("autopilot")
    tools = ctx.runtime.plugins.tools
    out = await tools.execute(ctx, "serve", {"action": "start", "static_dir": "../"})
    assert out.status == "failed" and "escapes the workspace" in out.content
    died = await tools.execute(ctx, "serve", {"action": "start", "command": "echo bye; exit 4"})
    assert (
        died.status == "failed"
        and "exited at once with code 4" in died.content
        and "bye" in died.content
    )
    both = await tools.execute(ctx, "serve", {"action": "start", "command": "x", "static_dir": "."})
    assert both.status == "failed" and "exactly one of command or static_dir" in both.content
    missing = await tools.execute(ctx, "serve", {"action": "stop", "name": "ghost"})
    assert missing.status == "failed" and "nothing named 'ghost'" in missing.content


async def test_serve_fenced(make_ctx):
    ctx = await make_ctx("brainstorming")
    res = await ctx.runtime.plugins.tools.execute(ctx, "serve", {"action": "list"})
    assert res.status == "refused" and "switch to autopilot" in res.content


def test_serve_exposes_command_for_policy():
    from ndomo.tools.shell.serve import ServeParams, serve

    cmd = serve.command
    assert cmd(ServeParams(action="start", command="npm run dev")) == "npm run dev"
    assert "http.server" in cmd(ServeParams(action="start", static_dir="site"))
    assert cmd(ServeParams(action="list")) is None


async def test_served_process_stops_when_its_session_ends(make_ctx, tmp_path):
    (tmp_path / "site").mkdir()
    ctx = await make_ctx("autopilot")
    res = await ctx.runtime.plugins.tools.execute(
        ctx, "serve", {"action": "start", "static_dir": "site"}
    )
    assert res.ok, res.content
    pid, port = res.data["pid"], res.data["port"]
    new = await ctx.runtime.new_session()
    assert new.id != ctx.session.id
    assert not alive(pid)
    assert not await port_open(port)


async def test_serve_output_streams_while_the_call_waits_for_the_server(rt, fake):
    from ndomo.runtime.context import TurnRequest
    from tests.unit.tools_shell.test_bash import _Waker

    cmd = "echo started; while [ ! -f go ]; do sleep 0.05; done; exec python3 -m http.server --bind $HOST $PORT"
    fake.push(
        {
            "tool_calls": [
                {"name": "serve", "arguments": {"action": "start", "command": cmd, "name": "dev"}}
            ]
        }
    )
    fake.push({"text": "serving"})
    host = _Waker(rt.app.root / "go")
    summary = await rt.run(TurnRequest(prompt="serve it", mode="autopilot"), host)
    assert summary.status == "done", summary.error
    kinds = [e.kind for e in host.events]
    # the server only started listening because "started" reached the host during the call
    assert kinds.index("tool_output") < kinds.index("tool_finished")
    finished = next(e for e in host.events if e.kind == "tool_finished")
    assert finished.status == "done" and "serving 'dev'" in finished.summary
    await rt.app.aclose()
