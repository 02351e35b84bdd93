"""A model request skips the SDK's per-request transform of messages and tool schemas
(it grew with the session's history) and still sends the same body."""

from __future__ import annotations

import openai.resources.chat.completions.completions as sdk_chat

from ndomo.config import ModelConfig
from ndomo.llm import TextChunk
from ndomo.llm.messages import Message
from ndomo.llm.openai_client import OpenAIClient
from tests.fakes.fake_model import FakeModel
from tests.unit.llm.conftest import READ


async def test_request_is_sent_without_the_sdk_transform(monkeypatch):
    def refuse(*a, **kw):
        raise AssertionError("the SDK transform ran")

    monkeypatch.setattr(sdk_chat, "async_maybe_transform", refuse)
    with FakeModel([{"text": "hello there"}]) as fake:
        client = OpenAIClient(ModelConfig(base_url=fake.url, name="fake-model"))
        try:
            history = [
                Message.user("hi"),
                Message(role="assistant", content="yes"),
                Message.user("again"),
            ]
            events = [e async for e in client.stream(history, [READ], temperature=0.2)]
        finally:
            await client.aclose()
        (request,) = fake.chat_requests()
    body = request["body"]
    assert "".join(e.text for e in events if isinstance(e, TextChunk)) == "hello there"
    assert [m["content"] for m in body["messages"]] == ["hi", "yes", "again"]
    assert body["tools"][0]["function"]["name"] == "read" and body["tool_choice"] == "auto"
    assert body["stream"] is True and body["temperature"] == 0.2 and body["model"] == "fake-model"


async def test_stream_chunks_are_not_built_into_sdk_models(monkeypatch):
    """A chunk model per delta was ~0.4 ms: the stream is read as plain JSON."""
    from openai.types.chat import ChatCompletionChunk

    def refuse(cls, *a, **kw):
        raise AssertionError("a ChatCompletionChunk was built")

    monkeypatch.setattr(ChatCompletionChunk, "construct", classmethod(refuse))
    monkeypatch.setattr(ChatCompletionChunk, "model_construct", classmethod(refuse))
    script = [
        {"text": "one two three four", "chunks": 4},
        {"tool_calls": [{"name": "read", "arguments": {"path": "a.py"}}]},
    ]
    with FakeModel(script) as fake:
        client = OpenAIClient(ModelConfig(base_url=fake.url, name="fake-model"))
        try:
            first = [e async for e in client.stream([Message.user("hi")], [READ])]
            second = [e async for e in client.stream([Message.user("read it")], [READ])]
        finally:
            await client.aclose()
    assert "".join(e.text for e in first if isinstance(e, TextChunk)) == "one two three four"
    calls = [e.call for e in second if hasattr(e, "call")]
    assert [(c.name, c.arguments) for c in calls] == [("read", {"path": "a.py"})]
