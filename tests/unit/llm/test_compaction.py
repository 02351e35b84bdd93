"""A session pushed past its context budget keeps its goal: the first request in the user's
words and the committed plan's task states ride in the system message of every request
that leaves old exchanges out, and the conversation stays valid for strict servers."""

from __future__ import annotations

from ndomo import compose
from ndomo.app import App
from ndomo.runtime.context import TurnRequest
from ndomo.runtime.host import BaseHost
from ndomo.runtime.runtime import Runtime
from tests.fakes.fake_model import FakeModel, varied_text

GOAL = "Port the frobnicator to Rust; keep the CLI flags --zork and --plugh exactly as they are."


def valid_for_strict_servers(messages: list[dict]) -> bool:
    """Every tool message answers a call of the assistant message before it."""
    open_calls: set[str] = set()
    for m in messages:
        if m["role"] == "assistant":
            open_calls = {c["id"] for c in m.get("tool_calls") or []}
        elif m["role"] == "tool" and m.get("tool_call_id") not in open_calls:
            return False
    return True


async def test_a_long_session_keeps_the_first_request_and_the_plan(tmp_path) -> None:
    # a known 4,096-token window: a few large answers push the session past it
    with FakeModel(n_ctx=4096) as fake:
        app = App(tmp_path)
        app.settings.model.base_url = fake.url
        app.settings.model.max_retries = 0
        app.settings.model.context_window = 4096
        rt = Runtime(app, compose.plugins())
        try:
            store = await app.store()
            plan = await store.create_plan({"title": "frobnicator", "overview": "port it"})
            await store.create_tasks(
                plan.id, [{"description": "port the parser"}, {"description": "port the CLI"}]
            )
            await store.approve_plan(plan.id)
            state = await rt.session()
            await store.update_session(state.id, committed_plan_id=plan.id)
            state.committed_plan_id = plan.id

            fake.push({"tool_calls": [{"name": "read", "arguments": {"path": "missing.txt"}}]})
            fake.push({"text": varied_text(3000)})
            first = await rt.run(TurnRequest(prompt=GOAL, mode="discussion"), BaseHost())
            assert first.status == "done", first
            for i in range(4):  # each answer ~750 tokens: the window overflows
                fake.push({"text": varied_text(3000)})
                summary = await rt.run(
                    TurnRequest(prompt=f"go on with step {i}", mode="discussion"), BaseHost()
                )
                assert summary.status == "done", summary
            last = fake.chat_requests()[-1]["body"]["messages"]
        finally:
            await app.aclose()
    users = [m["content"] for m in last if m["role"] == "user"]
    assert not any(u.startswith(GOAL) for u in users)  # the first exchange was left out …
    system = last[0]["content"]
    assert "## Earlier in this session" in system  # … and anchored
    assert "> " + GOAL in system  # word for word
    assert "The committed plan: frobnicator" in system
    assert "port the parser" in system and "port the CLI" in system
    assert valid_for_strict_servers(last)
