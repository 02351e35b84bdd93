from __future__ import annotations

import pytest

from ndomo import compose
from ndomo.runtime.context import TurnRequest
from ndomo.runtime.host import BaseHost
from ndomo.runtime.runtime import Runtime
from ndomo.runtime.tools import ToolDescriptor, ToolRegistry
from ndomo.tools.reflexes import catalog_for
from ndomo.tools.reflexes.loader import load_reflexes
from ndomo.tools.reflexes.template import TemplateError, substitute

GREET = """
name: greet
description: Say a word and note it.
params:
  word: {type: string, description: what to say}
  times: {type: integer, required: false, default: 1}
steps:
  - id: say
    bash: {command: "echo {{ params.word }} x{{params.times}}", timeout_s: "{{ params.times }}"}
  - remember: {content: "heard: {{ steps.say.output }}", category: fact}
"""


@pytest.fixture
def reflexes_dir(tmp_path):
    d = tmp_path / ".ndomo" / "reflexes"
    d.mkdir(parents=True)
    (d / "greet.yaml").write_text(GREET)
    return d


async def test_reflex_bash_step_refused_in_discussion_stops(make_ctx, reflexes_dir):
    ctx = await make_ctx("discussion")
    await catalog_for(ctx.app).refresh()
    run = ctx.runtime.plugins.tools.execute
    res = await run(ctx, "reflex_greet", {"word": "hello"})
    assert res.status == "refused" and not res.ok
    assert "not available in discussion mode" in res.content
    assert res.data["not_run"] == ["2 (remember)"]
    store = await ctx.app.store()
    assert await store.list_memories() == []  # the step after the refusal did not run


async def test_reflex_runs_in_autopilot_with_substitution(make_ctx, reflexes_dir):
    ctx = await make_ctx("autopilot")
    await catalog_for(ctx.app).refresh()
    res = await ctx.runtime.plugins.tools.execute(
        ctx, "reflex_greet", {"word": "hello", "times": 2}
    )
    assert res.ok, res.content
    assert [s["status"] for s in res.data["steps"]] == ["done", "done"]
    store = await ctx.app.store()
    [memo] = await store.list_memories()
    assert memo.content == "heard: exit code: 0\nhello x2"
    bad = await ctx.runtime.plugins.tools.execute(ctx, "reflex_greet", {"wrd": "x"})
    assert bad.status == "failed" and "unknown argument" in bad.content


async def test_reflex_offered_in_a_turn_and_runs_through_registry(rt, fake, reflexes_dir):
    fake.push({"tool_calls": [{"name": "reflex_greet", "arguments": {"word": "turn"}}]})
    fake.push({"text": "ok"})
    summary = await rt.run(TurnRequest(prompt="go", mode="autopilot"), BaseHost())
    assert summary.status == "done"
    reqs = fake.chat_requests()
    tools = {t["function"]["name"]: t["function"] for t in reqs[0]["body"]["tools"]}
    assert "reflex_greet" in tools and tools["reflex_greet"]["parameters"]["required"] == ["word"]
    result = [m for m in reqs[1]["body"]["messages"] if m["role"] == "tool"][-1]["content"]
    assert "all 2 steps done" in result


async def test_reflex_action_uses_session_mode(rt, app, reflexes_dir):
    app.instance(Runtime, lambda: rt)  # the action finds the runtime through the App
    run_action = compose.actions().get("reflex.run")
    await rt.set_mode("discussion")
    out = await run_action.invoke(app, {"name": "greet", "params": {"word": "hi"}})
    assert out["ok"] is False and out["mode"] == "discussion"
    assert out["steps"][0]["status"] == "refused" and out["not_run"] == ["2 (remember)"]
    await rt.set_mode("autopilot")
    out = await run_action.invoke(app, {"name": "greet", "params": {"word": "hi"}})
    assert out["ok"] is True and out["message"] == "all 2 steps done"
    from ndomo.actions import ActionError

    with pytest.raises(ActionError, match="no reflex named 'nope'"):
        await run_action.invoke(app, {"name": "nope"})
    listed = await compose.actions().get("reflex.list").invoke(app, {})
    assert [r["tool"] for r in listed["reflexes"]] == ["reflex_greet"]


def test_malformed_reflexes_reported(tmp_path, reflexes_dir):
    (reflexes_dir / "broken.yaml").write_text("name: [unclosed\n")
    (reflexes_dir / "badref.yaml").write_text(
        "steps:\n  - bash: {command: 'echo {{ params.ghost }}'}\n"
    )
    (reflexes_dir / "evil.yml").write_text(
        "steps:\n  - bash: {command: \"{{ __import__('os') }}\"}\n"
    )
    (reflexes_dir / "nosteps.yaml").write_text("name: nosteps\nsteps: []\n")
    (reflexes_dir / "later.yaml").write_text(
        "steps:\n  - bash: {command: '{{ steps.b.output }}'}\n  - id: b\n    bash: {command: x}\n"
    )
    (reflexes_dir / "two.yaml").write_text(
        "steps:\n  - bash: {command: x}\n    grep: {pattern: y}\n"
    )
    (reflexes_dir / "dup.yaml").write_text("name: greet\nsteps:\n  - bash: {command: x}\n")
    (reflexes_dir / "notes.txt").write_text("ignored")
    reflexes, problems = load_reflexes(tmp_path)
    assert [r.name for r in reflexes] == ["greet"]
    by_file = {p.path.rsplit("/", 1)[-1]: p.message for p in problems}
    assert "not valid YAML" in by_file["broken.yaml"]
    assert "unknown parameter 'ghost'" in by_file["badref.yaml"]
    assert "unsupported template expression" in by_file["evil.yml"]
    assert "at least 1 item" in by_file["nosteps.yaml"]
    assert "not an earlier step" in by_file["later.yaml"]
    assert "exactly one tool" in by_file["two.yaml"]
    assert "already defined in .ndomo/reflexes/dup.yaml" in by_file["greet.yaml"]
    assert "notes.txt" not in by_file


def test_template_substitution():
    params = {"n": 3, "flag": True, "s": "a b"}
    steps = {"one": "out1"}
    assert substitute({"x": "{{ params.n }}"}, params, steps) == {"x": 3}
    assert substitute(
        ["v{{params.n}} {{ steps.one.output }} {{ params.flag }}"], params, steps
    ) == ["v3 out1 true"]
    assert substitute({"k": {"deep": "{{ params.s }}!"}, "i": 5}, params, steps) == {
        "k": {"deep": "a b!"},
        "i": 5,
    }
    for bad in ("{{ params.n + 1 }}", "{{ steps.one }}", "{{ os.system('x') }}"):
        with pytest.raises(TemplateError):
            substitute(bad, params, steps)
    with pytest.raises(TemplateError, match="unknown parameter"):
        substitute("{{ params.zzz }}", params, steps)


async def test_registry_providers(make_ctx):
    async def run(ctx, p):
        return "from provider"

    from pydantic import BaseModel

    class P(BaseModel):
        pass

    reg = ToolRegistry()
    static = ToolDescriptor(name="same", description="static", params=P, run=run)
    reg.add(static)
    dyn = [
        ToolDescriptor(name="same", description="dynamic", params=P, run=run),
        ToolDescriptor(name="dyn", description="d", params=P, run=run, risk="exec"),
    ]
    reg.providers.append(lambda ctx: dyn)
    ctx = await make_ctx("discussion")
    assert reg.lookup(ctx, "same") is static
    assert [t.name for t in reg.filter(ctx)] == ["same"]
    refused = await reg.execute(ctx, "dyn", {})
    assert refused.status == "refused" and "not available in discussion" in refused.content
    ctx = await make_ctx("autopilot")
    assert (await reg.execute(ctx, "dyn", {})).content == "from provider"
