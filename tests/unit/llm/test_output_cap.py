"""Every request carries an output cap; an answer stopped by it, or by a loop, is said so.

Small local models loop ("I'm glad you're here." for two minutes, until the context is
full) and no request carried `max_tokens`. The fake server streams until the request's cap
like llama.cpp does (finish_reason "length"), or repeats itself.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from ndomo import compose
from ndomo.llm.loops import LoopWatch, looping
from ndomo.llm.messages import Finished
from ndomo.runtime.context import TurnRequest
from ndomo.runtime.host import BaseHost
from ndomo.runtime.runtime import Runtime
from tests.fakes.fake_model import FakeModel, varied_text
from tests.unit.llm.conftest import collect


def caps_sent(fake: FakeModel) -> list[Any]:
    return [
        (r["body"].get("max_tokens"), r["body"].get("max_completion_tokens"))
        for r in fake.chat_requests()
    ]


# -- the client ----------------------------------------------------------------------------


async def test_the_cap_is_sent_and_a_length_finish_reported(fake: Any, clients: Any) -> None:
    fake.push({"text": varied_text(400)})
    events = await collect(clients(fake.url), max_tokens=20)
    assert caps_sent(fake) == [(20, None)]
    assert [e.reason for e in events if isinstance(e, Finished)] == ["length"]
    assert sum(len(getattr(e, "text", "")) for e in events) == 80  # 20 tokens of 4 characters


async def test_openai_wants_max_completion_tokens_and_is_asked_again_once(clients: Any) -> None:
    with FakeModel(refuse_max_tokens=True) as fake:
        client = clients(fake.url)
        fake.push({"text": "one"})
        fake.push({"text": "two"})
        first = await collect(client, max_tokens=50)
        second = await collect(client, max_tokens=50)
    assert [e.text for e in first + second if hasattr(e, "text")] == ["one", "two"]
    # refused once, then the other name, remembered for the next request
    assert caps_sent(fake) == [(50, None), (None, 50), (None, 50)]


def test_openai_own_endpoint_starts_with_max_completion_tokens() -> None:
    from ndomo.config import ModelConfig
    from ndomo.llm.openai_client import OpenAIClient

    client = OpenAIClient(ModelConfig(base_url="https://api.openai.com/v1", name="gpt-5"))
    other = OpenAIClient(ModelConfig(base_url="http://127.0.0.1:8080/v1", name="x"))
    assert client._params([], [], "gpt-5", None, True, 10)["max_completion_tokens"] == 10
    assert other._params([], [], "x", None, True, 10)["max_tokens"] == 10
    assert "max_tokens" not in other._params([], [], "x", None, True)


# -- the loop watch ------------------------------------------------------------------------


def test_a_repeated_phrase_is_a_loop_and_prose_is_not() -> None:
    phrase = "I'm glad you're here. "
    watch = LoopWatch()
    fed = phrase * 200
    assert any(watch.feed(fed[i : i + 5]) for i in range(0, len(fed), 5))
    from pathlib import Path

    for source in (Path(__file__), Path(__file__).parents[3] / "docs" / "architecture.md"):
        text = source.read_text()
        watch = LoopWatch()
        assert not any(watch.feed(text[i : i + 7]) for i in range(0, len(text), 7)), source
    assert looping("\n" * 2000, 1200, 4)
    assert not looping(varied_text(3000), 1200, 4)


# -- the turn ------------------------------------------------------------------------------


@pytest.fixture
def rt(app: Any) -> Runtime:
    return Runtime(app, compose.plugins())


async def _turn(rt: Runtime) -> tuple[Any, BaseHost]:
    host = BaseHost()
    summary = await asyncio.wait_for(rt.run(TurnRequest(prompt="hello"), host), 60)
    return summary, host


async def test_a_looping_model_is_stopped_and_the_user_told(rt: Runtime, fake: Any) -> None:
    # At a model's pace (1 ms a chunk: 2,048 chunks to the cap): the fake, a thread of this
    # process, could otherwise write the whole capped answer into the socket's buffers
    # before the turn read the ~100 chunks that show the loop, and see no hang-up at all.
    fake.push({"runaway": "repeat", "text": "I'm glad you're here. ", "chunk_delay": 0.001})
    started = time.monotonic()
    summary, host = await _turn(rt)
    assert summary.status == "capped"
    assert "repeated itself" in (summary.error or "")
    notices = [e.message for e in host.events if e.kind == "notice"]
    assert any("repeated itself" in n for n in notices)
    assert fake.wait_for_disconnect(10)  # the request was closed, not read to its end
    assert time.monotonic() - started < 30
    # the request carried the cap
    assert caps_sent(fake)[0] == (rt.app.settings.model.max_output_tokens, None)
    # the session goes on: the next turn is answered
    after, _ = await _turn(rt)
    assert after.status == "done"


async def test_a_model_that_never_stops_ends_at_the_cap(rt: Runtime, fake: Any) -> None:
    rt.app.settings.model.max_output_tokens = 64
    fake.push({"runaway": "varied"})
    summary, host = await _turn(rt)
    assert summary.status == "capped"
    assert "output limit of 64 tokens" in (summary.error or "")
    streamed = "".join(e.text for e in host.events if e.kind == "text")
    assert len(streamed) == 64 * 4
    assert summary.answer == streamed  # what was shown stays the answer
    assert caps_sent(fake) == [(64, None)]


async def test_the_cap_leaves_the_request_room_in_a_known_window(rt: Runtime, fake: Any) -> None:
    rt.app.settings.model.context_window = 4096
    fake.push({"text": "short"})
    summary, _ = await _turn(rt)
    assert summary.status == "done"
    sent = caps_sent(fake)[0][0]
    assert sent is not None and 1024 <= sent < 4096  # the window minus the request
