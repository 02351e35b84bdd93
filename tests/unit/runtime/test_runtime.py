"""The runtime end to end against the fake model server and a real SQLite store."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import BaseModel, ConfigDict

from ndomo import compose
from ndomo.runtime.context import TurnRequest
from ndomo.runtime.hooks import HookAction, HookResult, LifecycleHook, Phase
from ndomo.runtime.host import BaseHost
from ndomo.runtime.runtime import Runtime
from ndomo.runtime.tools import ToolResult, tool


class NoArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")


RAN: list[str] = []


# No mode named here: risk "exec" makes it an "execute" tool, which only autopilot admits.
@tool("shell_only", NoArgs, description="pretend shell", risk="exec")
async def shell_only(ctx, p):
    RAN.append("shell_only")
    return "ran"


@tool("slow", NoArgs, description="takes long")
async def slow(ctx, p):
    await asyncio.sleep(30)
    return "finished sleeping"


@tool("noop", NoArgs, description="does nothing")
async def noop(ctx, p):
    return "ok"


def runtime_with(app, *extra_tools, hooks=()):
    plugins = compose.plugins()
    for t in extra_tools:
        plugins.tools.add(t)
    plugins.hooks.extend(hooks)
    return Runtime(app, plugins)


def tool_messages(request):
    return [m for m in request["body"]["messages"] if m["role"] == "tool"]


def offered(request):
    return {t["function"]["name"] for t in request["body"].get("tools", [])}


async def turn_row(app, turn_id):
    store = await app.store()
    return await store.get_turn(turn_id)


async def test_plain_answer_is_recorded(app, fake):
    fake.push({"text": "hello there", "chunks": 3})
    rt = runtime_with(app)
    host = BaseHost()
    summary = await rt.run(TurnRequest(prompt="hi"), host)
    assert summary.status == "done" and summary.answer == "hello there"
    assert "".join(e.text for e in host.events if e.kind == "text") == "hello there"
    row = await turn_row(app, summary.turn_id)
    assert row.status == "done" and row.prompt == "hi" and row.mode == "discussion"
    stored = await (await app.store()).session_messages(summary.session)
    assert [(m.role, m.content, m.turn_id) for m in stored] == [
        ("user", "hi", summary.turn_id),
        ("assistant", "hello there", summary.turn_id),
    ]


async def test_tool_outside_mode_is_not_offered_and_refused_when_named(app, fake):
    RAN.clear()
    fake.push({"tool_calls": [{"name": "shell_only", "arguments": {}}]})
    fake.push({"text": "ok, I cannot"})
    rt = runtime_with(app, shell_only)
    summary = await rt.run(TurnRequest(prompt="run it", mode="discussion"))
    assert summary.status == "done"
    first, second = fake.chat_requests()[:2]
    assert "shell_only" not in offered(first)
    refusal = tool_messages(second)[0]["content"]
    assert refusal == "tool 'shell_only' is not available in discussion mode; switch to autopilot"
    assert RAN == []
    # and in autopilot it is offered and runs
    fake.push({"tool_calls": [{"name": "shell_only", "arguments": {}}]})
    fake.push({"text": "ran it"})
    summary = await rt.run(TurnRequest(prompt="run it", mode="autopilot"))
    assert "shell_only" in offered(fake.chat_requests()[2]) and RAN == ["shell_only"]


async def test_cancelling_one_tool_call_lets_the_turn_finish(app, fake):
    fake.push({"tool_calls": [{"name": "slow", "arguments": {}}]})
    fake.push({"text": "moved on"})
    rt = runtime_with(app, slow)
    host = BaseHost()
    task = asyncio.create_task(rt.run(TurnRequest(prompt="go"), host))
    for _ in range(200):
        started = [e for e in host.events if e.kind == "tool_started"]
        if started:
            break
        await asyncio.sleep(0.02)
    assert rt.cancel_call(started[0].call_id)
    summary = await asyncio.wait_for(task, 10)
    assert summary.status == "done" and summary.answer == "moved on"
    assert tool_messages(fake.chat_requests()[1])[0]["content"] == "cancelled by the user"
    finished = [e for e in host.events if e.kind == "tool_finished"][0]
    assert finished.status == "cancelled"


async def test_cancelling_the_turn_ends_it_and_records_cancelled(app, fake):
    fake.push({"tool_calls": [{"name": "slow", "arguments": {}}]})
    rt = runtime_with(app, slow)
    host = BaseHost()
    task = asyncio.create_task(rt.run(TurnRequest(prompt="go"), host))
    for _ in range(200):
        if any(e.kind == "tool_started" for e in host.events):
            break
        await asyncio.sleep(0.02)
    assert rt.cancel()
    summary = await asyncio.wait_for(task, 5)
    assert summary.status == "cancelled"
    assert (await turn_row(app, summary.turn_id)).status == "cancelled"
    assert rt.coordinator.running() == []


async def test_cancel_during_a_slow_model_stream(app, fake):
    fake.push({"text": "too late", "delay": 20})
    rt = runtime_with(app)
    task = asyncio.create_task(rt.run(TurnRequest(prompt="go")))
    await asyncio.sleep(0.5)
    assert rt.cancel()
    summary = await asyncio.wait_for(task, 5)
    assert summary.status == "cancelled"


async def test_iteration_cap_ends_the_turn_as_capped(app, fake):
    app.settings.modes.iteration_caps = {"discussion": 2, "brainstorming": 16, "autopilot": 40}
    for _ in range(3):
        fake.push({"tool_calls": [{"name": "noop", "arguments": {}}]})
    rt = runtime_with(app, noop)
    summary = await rt.run(TurnRequest(prompt="loop"))
    assert summary.status == "capped" and "iteration cap" in summary.error
    assert len(fake.chat_requests()) == 2
    assert (await turn_row(app, summary.turn_id)).status == "capped"


async def test_handback_ends_the_turn_as_blocked(app, fake):
    fake.push({"tool_calls": [{"name": "handback", "arguments": {"reason": "need the API key"}}]})
    rt = runtime_with(app)
    summary = await rt.run(TurnRequest(prompt="deploy", mode="autopilot"))
    assert summary.status == "blocked" and summary.handback == "need the API key"
    row = await turn_row(app, summary.turn_id)
    assert row.status == "blocked" and "API key" in (row.error or "")
    state = await rt.session(summary.session)
    assert (await rt.status(state)).state == "foreman handed back: need the API key"


async def test_garbage_tool_call_json_is_reported_to_the_model(app, fake):
    fake.push({"tool_calls": [{"name": "noop", "arguments": "{not json"}]})
    fake.push({"text": "fixed"})
    rt = runtime_with(app, noop)
    summary = await rt.run(TurnRequest(prompt="go"))
    assert summary.status == "done" and summary.answer == "fixed"
    msg = tool_messages(fake.chat_requests()[1])[0]["content"]
    assert "not valid JSON" in msg


@pytest.mark.parametrize(
    "step, expected",
    [
        ({"status": 401}, "API key"),
        ({"status": 429}, "rate"),
    ],
)
async def test_model_http_errors_give_specific_messages(app, fake, step, expected):
    fake.push(step)
    rt = runtime_with(app)
    summary = await rt.run(TurnRequest(prompt="hi"))
    assert summary.status == "failed" and expected.lower() in summary.error.lower()
    assert (await turn_row(app, summary.turn_id)).status == "failed"


async def test_unreachable_model_names_the_url(app):
    app.settings.model.base_url = "http://127.0.0.1:9/v1"
    rt = runtime_with(app)
    summary = await rt.run(TurnRequest(prompt="hi"))
    assert summary.status == "failed" and "http://127.0.0.1:9/v1" in summary.error
    assert "unreachable" in summary.error


async def test_slash_mode_switches_without_a_model_call(app, fake):
    rt = runtime_with(app)
    seen = []

    async def listener(status):
        seen.append(status)

    rt.status_listeners.add(listener)
    summary = await rt.run(TurnRequest(prompt="/mode brainstorming"))
    assert summary.status == "done" and summary.payload == {"mode": "brainstorming"}
    assert fake.chat_requests() == []
    assert any(s.mode == "brainstorming" and not s.busy for s in seen)
    assert (await rt.session(summary.session)).mode == "brainstorming"
    bad = await rt.run(TurnRequest(prompt="/mode sideways"))
    assert bad.status == "failed" and "unknown mode" in bad.error
    unknown = await rt.run(TurnRequest(prompt="/frobnicate"))
    assert unknown.status == "failed" and "unknown command /frobnicate" in unknown.error


async def test_skip_agent_still_runs_post_response_and_finally(app, fake):
    log: list[str] = []

    def hook(name, phase, result=None):
        async def run(self, ctx):
            log.append(name)
            return result

        return type(name, (LifecycleHook,), {"phase": phase, "name": name, "run": run})()

    rt = runtime_with(
        app,
        hooks=[
            hook("skip", Phase.PRE_DISPATCH, HookResult(HookAction.SKIP_AGENT)),
            hook("build", Phase.PRE_AGENT_BUILD),
            hook("post", Phase.POST_RESPONSE),
            hook("fin", Phase.FINALLY),
        ],
    )
    summary = await rt.run(TurnRequest(prompt="hi"))
    assert log == ["skip", "post", "fin"]
    assert summary.status == "done" and fake.chat_requests() == []


async def test_a_failing_hook_fails_the_turn_and_finally_still_runs(app, fake):
    seen = []

    class Boom(LifecycleHook):
        phase, name = Phase.PRE_EXECUTE, "boom"

        async def run(self, ctx):
            raise ValueError("kaput")

    class Fin(LifecycleHook):
        phase, name = Phase.FINALLY, "fin"

        async def run(self, ctx):
            seen.append((ctx.status, ctx.error))

    rt = runtime_with(app, hooks=[Boom(), Fin()])
    summary = await rt.run(TurnRequest(prompt="hi"))
    assert summary.status == "failed" and "kaput" in summary.error
    assert seen == [("failed", "ValueError: kaput")]
    assert fake.chat_requests() == []


async def test_session_keeps_mode_and_new_session_starts_in_default(app, fake):
    rt = runtime_with(app)
    await rt.set_mode("autopilot")
    first = await rt.session()
    assert first.mode == "autopilot"
    fake.push({"text": "ok"})
    summary = await rt.run(TurnRequest(prompt="hi"))
    assert summary.mode == "autopilot"
    new = await rt.new_session()
    assert new.id != first.id and new.mode == app.settings.modes.default


async def test_autopilot_follows_the_committed_plan_as_guidance(app, fake):
    store = await app.store()
    plan = await store.create_plan({"title": "Split config", "overview": "one module per source"})
    await store.create_tasks(
        plan.id,
        [{"description": "move yaml loading", "files": ["cfg.py"]}, {"description": "tests"}],
    )
    rt = runtime_with(app)
    state = await rt.session()
    await store.update_session(state.id, committed_plan_id=plan.id)
    fake.push({"text": "on it"})
    await rt.run(TurnRequest(prompt="go", mode="autopilot"))
    messages = fake.chat_requests()[0]["body"]["messages"]
    # per-turn guidance rides in the latest user message; the system prompt stays stable for caches
    assert [m["role"] for m in messages] == ["system", "user"] and "Committed plan" not in messages[
        0
    ]["content"]
    guidance = messages[-1]["content"].split("\n\n", 1)[1]
    assert guidance.startswith("Committed plan")
    assert "Split config" in guidance and "move yaml loading (cfg.py)" in guidance
    status = await rt.status(await rt.session())
    assert status.plan == {
        "id": plan.id,
        "slug": plan.slug,
        "status": "draft",
        "done": 0,
        "total": 2,
    }
    # discussion does not inject it
    fake.push({"text": "ok"})
    await rt.run(TurnRequest(prompt="talk", mode="discussion"))
    assert not any(
        "Committed plan" in m["content"] for m in fake.chat_requests()[-1]["body"]["messages"][-1:]
    )


async def test_a_call_cancelled_before_it_starts_never_runs(app):
    from ndomo.runtime.coordinator import ToolCallCoordinator

    co = ToolCallCoordinator()
    entry = co.new("slow", turn_id=1)
    assert co.cancel(entry.id)
    started = []

    async def work():
        started.append(True)
        return ToolResult(content="ran")

    result = await co.run(entry, work)
    assert (
        result.status == "cancelled" and result.content == "cancelled by the user" and not started
    )


async def test_base_host_keeps_crlf(tmp_path):
    path = tmp_path / "win.txt"
    path.write_bytes(b"a\r\nb\r\n")
    host = BaseHost()
    text = await host.read_text(path)
    assert text == "a\r\nb\r\n"
    await host.apply_edit(path, text.replace("b", "c"), text)
    assert path.read_bytes() == b"a\r\nc\r\n"


def test_history_is_trimmed_by_whole_exchanges():
    from ndomo.llm.messages import Message, ToolCall
    from ndomo.runtime.history import trim_history

    def exchange(n, size):
        call = ToolCall(
            id=f"c{n}", name="read", arguments={"path": "x"}, raw_arguments='{"path": "x"}'
        )
        return [
            Message(role="user", content=f"q{n}" + "x" * size),
            Message(role="assistant", content=None, tool_calls=[call]),
            Message(role="tool", tool_call_id=f"c{n}", name="read", content="r" * size),
            Message(role="assistant", content=f"a{n}"),
        ]

    history = exchange(1, 1000) + exchange(2, 1000) + exchange(3, 1000)
    assert trim_history(history, 10_000) == history
    kept = trim_history(history, 4500)
    assert [m.content[:2] for m in kept if m.role == "user"] == ["q2", "q3"]
    assert kept[0].role == "user"  # never starts with an orphaned tool result
    only_last = trim_history(history, 10)
    assert only_last == history[8:]  # the latest exchange survives any budget


async def test_session_history_is_carried_and_trimmed(app, fake):
    app.settings.history_chars = 1000
    rt = runtime_with(app)
    for i in range(3):
        fake.push({"text": f"answer {i} " + "z" * 600})
        await rt.run(TurnRequest(prompt=f"question {i}"))
    sent = [
        m["content"] for m in fake.chat_requests()[2]["body"]["messages"] if m["role"] == "user"
    ]
    assert sent == ["question 1", "question 2"]  # question 0 fell out of the budget


async def test_a_history_within_budget_is_kept_without_walking_it(app, fake, monkeypatch):
    """The session's conversation is summed as it is read: while all of it fits
    `history_chars`, a turn keeps it whole without measuring every message again (its
    set-up must not grow with the session); once it does not fit, it is trimmed as before."""
    from ndomo.llm import budget
    from ndomo.runtime import history

    rt = runtime_with(app)
    for i in range(3):
        fake.push({"text": f"answer {i} " + "z" * 600})
        await rt.run(TurnRequest(prompt=f"question {i}"))
    session = fake.chat_requests()[-1]["body"]["messages"][1:-1]
    measured: list[str | None] = []
    real = budget.chars

    def counting(m):
        measured.append(m.content)
        return real(m)

    monkeypatch.setattr(budget, "chars", counting)
    monkeypatch.setattr(history, "chars", counting, raising=False)
    fake.push({"text": "answer 3"})
    await rt.run(TurnRequest(prompt="question 3"))
    sent = fake.chat_requests()[-1]["body"]["messages"]
    assert [m["content"] for m in sent[1:-1]] == [
        *(m["content"] for m in session),
        "question 2",
        "answer 2 " + "z" * 600,
    ]
    assert measured == ["question 2", "answer 2 " + "z" * 600]  # only what was new
    measured.clear()
    app.settings.history_chars = 1000  # no longer fits: trimmed, walked from the newest
    fake.push({"text": "answer 4"})
    await rt.run(TurnRequest(prompt="question 4"))
    users = [
        m["content"] for m in fake.chat_requests()[-1]["body"]["messages"] if m["role"] == "user"
    ]
    assert users == ["question 2", "question 3", "question 4"]
    assert len(measured) > 2


async def test_closing_logs_a_turn_that_fails_on_its_way_out(app, caplog):
    """`aclose` cancels running turns; a turn whose clean-up raises is logged with its session
    and traceback (it used to vanish in `except BaseException: pass`)."""
    rt = Runtime(app, plugins=compose.plugins())
    started = asyncio.Event()

    async def turn() -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            raise ValueError("clean-up broke") from None

    task = asyncio.create_task(turn())
    await started.wait()
    rt.active["s-closing"] = (None, task)
    with caplog.at_level("ERROR", logger="ndomo.runtime"):
        await rt.aclose()
    assert task.done()
    assert any(
        "s-closing" in r.getMessage() and r.exc_info and r.exc_info[0] is ValueError
        for r in caplog.records
    ), caplog.records


async def test_a_turn_about_a_folder_names_it_instead_of_failing(app, fake):
    """An editor may send a folder's uri (an explorer's context menu): the turn goes on and
    the model is told which folder the user is looking at."""
    (app.root / "src").mkdir()
    fake.push({"text": "it holds the sources"})
    rt = Runtime(app, compose.plugins())
    summary = await rt.run(TurnRequest(prompt="what is here?", uri=(app.root / "src").as_uri()))
    assert summary.status == "done", summary.error
    user = fake.chat_requests()[-1]["body"]["messages"][-1]["content"]
    assert "The user is looking at the folder src." in user, user


async def test_a_turn_takes_its_session_from_the_claim(app, fake, monkeypatch):
    """The claim reads the session's row in its own transaction: a mode switched by another
    process (the CLI) since the last turn applies, and the turn does no read of its own."""
    from ndomo.store.store import PlanStore

    rt = runtime_with(app)
    fake.push({"text": "one"})
    first = await rt.run(TurnRequest(prompt="a"))
    other = await PlanStore.open(app.db_path, workspace=app.root)
    try:
        await other.update_session(first.session, mode="brainstorming")
    finally:
        await other.close()
    store = await app.store()
    reads: list[str] = []
    real = store.get_session
    monkeypatch.setattr(store, "get_session", lambda sid: reads.append(sid) or real(sid))
    fake.push({"text": "two"})
    second = await rt.run(TurnRequest(prompt="b"))
    assert (second.status, second.session, second.mode) == ("done", first.session, "brainstorming")
    assert reads == []
    assert await store.session_claim(first.session) is None


async def test_a_refused_agent_releases_the_claim(app, fake):
    rt = runtime_with(app)
    summary = await rt.run(TurnRequest(prompt="a", agent="nobody"))
    assert summary.status == "failed" and "unknown agent" in (summary.error or "")
    assert await (await app.store()).session_claim(summary.session) is None
