"""A misbehaving model: readable errors, the turn ends, the session stays usable."""

from __future__ import annotations

import asyncio

import pytest

from ndomo import compose
from ndomo.runtime.context import TurnRequest
from ndomo.runtime.host import BaseHost
from ndomo.runtime.runtime import Runtime
from tests.fakes.fake_model import FakeModel


@pytest.fixture
def fake():
    """The shared `app` fixture talks to this one: it answers "recovered" once the script ends."""
    with FakeModel(default_text="recovered") as fm:
        yield fm


@pytest.fixture
def rt(app):
    return Runtime(app, compose.plugins())


async def run_then_next(rt: Runtime, prompt: str = "go"):
    host = BaseHost()
    first = await asyncio.wait_for(rt.run(TurnRequest(prompt=prompt), host), 60)
    assert first.status != "running" and not rt.active
    row = await (await rt.app.store()).get_turn(first.turn_id)
    assert row.status == first.status and row.finished_at
    after = await asyncio.wait_for(rt.run(TurnRequest(prompt="and now?"), BaseHost()), 60)
    assert after.session == first.session
    assert (after.status, after.answer) == ("done", "recovered")
    return first, host


def tool_replies(fake) -> list[str]:
    return [
        m["content"] for m in fake.chat_requests()[1]["body"]["messages"] if m["role"] == "tool"
    ]


async def test_reply_that_is_not_json(rt, fake):
    fake.push({"garbage": True})
    first, _ = await run_then_next(rt)
    assert first.status == "failed"
    assert "instead of an event stream" in first.error and fake.url in first.error
    assert "Traceback" not in first.error


async def test_stream_cut_mid_answer(rt, fake):
    fake.push({"cut": True, "text": "0123456789" * 50, "chunks": 5})
    first, _ = await run_then_next(rt)
    assert first.status == "failed" and "cut the stream off" in first.error


async def test_unknown_tool_name_is_answered_and_the_turn_goes_on(rt, fake):
    fake.push({"tool_calls": [{"name": "rm_rf_everything", "arguments": {}}]})
    fake.push({"text": "sorry"})
    first, host = await run_then_next(rt)
    assert (first.status, first.answer) == ("done", "sorry")
    reply = tool_replies(fake)[0]
    assert reply.startswith("unknown tool 'rm_rf_everything'") and "available tools" in reply


async def test_tool_arguments_that_are_not_json(rt, fake):
    fake.push({"tool_calls": [{"name": "handback", "arguments": "{oops, not json"}]})
    fake.push({"text": "fixed"})
    first, _ = await run_then_next(rt)
    assert (first.status, first.answer) == ("done", "fixed")
    assert "not valid JSON" in tool_replies(fake)[0]


async def test_five_megabyte_answer(rt, fake):
    size = 5 * 1024 * 1024
    # ~1.3M tokens: far past the default output cap (which the fake honours like a real
    # server); raised so the test is about streaming 5 MB, not about the cap
    rt.app.settings.model.max_output_tokens = size
    fake.push({"huge": size})
    first, host = await run_then_next(rt)
    assert first.status == "done"
    streamed = "".join(e.text for e in host.events if e.kind == "text")
    assert len(streamed) == size  # the editor got all of it
    assert first.answer.startswith("w000000 w000001")
