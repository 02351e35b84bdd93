from __future__ import annotations

import asyncio
import contextlib
import uuid

from ndomo.runtime.context import TurnRequest
from ndomo.runtime.host import BaseHost
from tests.unit.tools_shell.conftest import alive, pids_with_arg


async def test_bash_fenced_outside_autopilot(make_ctx):
    for mode in ("discussion", "brainstorming"):
        ctx = await make_ctx(mode)
        assert "bash" not in {t.name for t in ctx.tools}
        res = await ctx.runtime.plugins.tools.execute(ctx, "bash", {"command": "touch made"})
        assert res.status == "refused"
        assert f"not available in {mode} mode" in res.content
        assert not (ctx.app.root / "made").exists()


async def test_bash_runs_in_autopilot_in_workspace_root(make_ctx):
    ctx = await make_ctx("autopilot")
    assert "bash" in {t.name for t in ctx.tools}
    res = await ctx.runtime.plugins.tools.execute(
        ctx, "bash", {"command": "pwd; echo oops >&2; exit 3"}
    )
    assert res.status == "failed" and not res.ok
    assert res.content.startswith("exit code: 3")
    assert str(ctx.app.root) in res.content and "oops" in res.content
    ok = await ctx.runtime.plugins.tools.execute(ctx, "bash", {"command": "echo hi"})
    assert ok.ok and ok.content == "exit code: 0\nhi\n"


async def test_bash_timeout_kills_grandchild(make_ctx, tmp_path):
    ctx = await make_ctx("autopilot")
    naptime = f"300.{uuid.uuid4().int % 10**9}"  # a unique argument to find it by
    cmd = f"bash -c 'sleep {naptime} & echo started > grandchild.started; wait'"
    res = await ctx.runtime.plugins.tools.execute(ctx, "bash", {"command": cmd, "timeout_s": 1})
    assert res.data["timed_out"] and "timed out" in res.content
    assert (tmp_path / "grandchild.started").exists()
    for _ in range(50):
        if not pids_with_arg(naptime):
            break
        await asyncio.sleep(0.1)
    assert not pids_with_arg(naptime)


async def test_bash_task_cancel_kills_grandchild(make_ctx, tmp_path):
    ctx = await make_ctx("autopilot")
    naptime = f"300.{uuid.uuid4().int % 10**9}"
    cmd = f"bash -c 'sleep {naptime} & wait'"
    task = asyncio.ensure_future(ctx.runtime.plugins.tools.execute(ctx, "bash", {"command": cmd}))
    for _ in range(100):
        if pids_with_arg(naptime):
            break
        await asyncio.sleep(0.05)
    (pid,) = pids_with_arg(naptime)
    assert alive(pid)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    for _ in range(50):  # SIGKILL delivery is asynchronous
        if not alive(pid):
            break
        await asyncio.sleep(0.1)
    assert not alive(pid)


async def test_bash_turn_cancel_event_reports_cancelled(make_ctx, tmp_path):
    ctx = await make_ctx("autopilot")
    task = asyncio.ensure_future(
        ctx.runtime.plugins.tools.execute(ctx, "bash", {"command": "sleep 300"})
    )
    await asyncio.sleep(0.3)
    ctx.cancelled.set()
    res = await task
    assert res.status == "cancelled" and "cancelled" in res.content


async def test_bash_output_cap_states_truncation(make_ctx):
    ctx = await make_ctx("autopilot")
    ctx.app.settings.shell.output_cap = 1000
    res = await ctx.runtime.plugins.tools.execute(
        ctx, "bash", {"command": "head -c 5000 /dev/zero | tr '\\0' a"}
    )
    assert "truncated 4000 bytes" in res.content
    assert "output truncated: 4000 bytes" in res.content
    assert res.data["truncated_bytes"] == 4000


async def test_bash_rejects_bad_timeout(make_ctx):
    ctx = await make_ctx("autopilot")
    res = await ctx.runtime.plugins.tools.execute(
        ctx, "bash", {"command": "true", "timeout_s": 10_000}
    )
    assert res.status == "failed" and "timeout_s" in res.content


async def test_bash_in_a_model_turn(rt, fake):
    # discussion: not offered, refused when called anyway; autopilot: offered and run
    fake.push({"tool_calls": [{"name": "bash", "arguments": {"command": "touch nope"}}]})
    fake.push({"text": "ok"})
    fake.push({"tool_calls": [{"name": "bash", "arguments": {"command": "echo from-model"}}]})
    fake.push({"text": "ran it"})
    summary = await rt.run(TurnRequest(prompt="try", mode="discussion"), BaseHost())
    assert summary.status == "done"
    summary = await rt.run(TurnRequest(prompt="try", mode="autopilot"), BaseHost())
    assert summary.status == "done"
    reqs = fake.chat_requests()
    offered = [{t["function"]["name"] for t in r["body"].get("tools", [])} for r in reqs]
    assert "bash" not in offered[0] and "bash" in offered[2]
    refused = [m for m in reqs[1]["body"]["messages"] if m["role"] == "tool"][-1]["content"]
    assert "not available in discussion mode" in refused
    assert not (rt.app.root / "nope").exists()
    ran = [m for m in reqs[3]["body"]["messages"] if m["role"] == "tool"][-1]["content"]
    assert ran == "exit code: 0\nfrom-model\n"


class _Waker(BaseHost):
    """Creates the file the command waits for only once its first output has arrived here."""

    def __init__(self, go):
        super().__init__()
        self.go = go

    async def emit(self, event):
        await super().emit(event)
        if event.kind == "tool_output" and "started" in event.text:
            self.go.write_text("")


async def test_bash_output_streams_to_the_host_while_the_command_runs(rt, fake):
    go = rt.app.root / "go"
    fake.push(
        {
            "tool_calls": [
                {
                    "name": "bash",
                    "arguments": {
                        "command": "echo started; while [ ! -f go ]; do sleep 0.05; done; echo finished"
                    },
                }
            ]
        }
    )
    fake.push({"text": "ran it"})
    host = _Waker(go)
    summary = await rt.run(TurnRequest(prompt="run it", mode="autopilot"), host)
    assert summary.status == "done", summary.error
    kinds = [e.kind for e in host.events]
    outputs = [e for e in host.events if e.kind == "tool_output"]
    # the command could only finish because "started" reached the host while it was running
    assert outputs[0].text.startswith("started") and outputs[0].name == "bash"
    assert "finished" in "".join(e.text for e in outputs)
    assert kinds.index("tool_output") < kinds.index("tool_finished")
    started = next(e for e in host.events if e.kind == "tool_started")
    assert {e.call_id for e in outputs} == {started.call_id}
    result = [
        m["content"] for m in fake.chat_requests()[-1]["body"]["messages"] if m["role"] == "tool"
    ][-1]
    assert (
        result.startswith("exit code: 0") and "started\nfinished" in result
    )  # the model's result as before


async def test_streamed_output_is_bounded_per_call(rt, fake, monkeypatch):
    from ndomo.runtime import output

    monkeypatch.setattr(output, "STREAM_CAP", 1000)
    fake.push(
        {"tool_calls": [{"name": "bash", "arguments": {"command": "printf 'q%.0s' $(seq 5000)"}}]}
    )
    fake.push({"text": "ok"})
    host = BaseHost()
    await rt.run(TurnRequest(prompt="run it", mode="autopilot"), host)
    streamed = "".join(e.text for e in host.events if e.kind == "tool_output")
    assert streamed.count("q") == 1000 and "the tool's result has the rest" in streamed
    result = [
        m["content"] for m in fake.chat_requests()[-1]["body"]["messages"] if m["role"] == "tool"
    ][-1]
    assert result.count("q") == 5000
