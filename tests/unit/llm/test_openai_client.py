"""The real OpenAI client against the scripted fake server (no SDK mocks)."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest

from ndomo.config import ModelConfig
from ndomo.llm import (
    Finished,
    Message,
    ModelAuthError,
    ModelBadResponse,
    ModelRateLimited,
    ModelServerError,
    ModelTimeout,
    ModelUnreachable,
    TextChunk,
    ThoughtChunk,
    ToolCall,
    ToolCallReady,
    UsageEvent,
    make_client,
)
from ndomo.llm.openai_client import OpenAIClient

from .conftest import READ, collect


def text_of(events: list[Any]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextChunk))


def calls_of(events: list[Any]) -> list[ToolCall]:
    return [e.call for e in events if isinstance(e, ToolCallReady)]


async def test_plain_answer_and_request_shape(fake: Any, clients: Any) -> None:
    fake.push({"text": "hello"})
    events = await collect(clients(fake.url))
    assert text_of(events) == "hello"
    assert isinstance(events[-1], Finished) and events[-1].reason == "stop"
    assert isinstance(events[-2], UsageEvent) and events[-2].usage.completion_tokens > 0
    body = fake.chat_requests()[0]["body"]
    assert body["model"] == "fake-model" and body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["messages"] == [{"role": "user", "content": "hi"}]
    assert "tools" not in body and "tool_choice" not in body and "temperature" not in body
    assert fake.chat_requests()[0]["headers"]["authorization"] == "Bearer not-needed"


async def test_streamed_answer_arrives_in_pieces(fake: Any, clients: Any) -> None:
    fake.push({"text": "one two three four", "chunks": 4})
    events = await collect(clients(fake.url))
    deltas = [e for e in events if isinstance(e, TextChunk)]
    assert len(deltas) == 4 and text_of(events) == "one two three four"


async def test_streamed_reasoning_is_a_thought_before_the_answer_not_part_of_it(
    fake: Any, clients: Any
) -> None:
    fake.push({"text": "42", "reasoning": "six times seven", "reasoning_chunks": 3})
    events = await collect(clients(fake.url))
    thoughts = [e for e in events if isinstance(e, ThoughtChunk)]
    assert len(thoughts) == 3 and "".join(t.text for t in thoughts) == "six times seven"
    assert text_of(events) == "42"
    first_text = next(i for i, e in enumerate(events) if isinstance(e, TextChunk))
    assert events.index(thoughts[-1]) < first_text


async def test_tool_call_assembled_from_fragments(fake: Any, clients: Any) -> None:
    fake.push(
        {
            "text": "let me look",
            "tool_calls": [
                {"name": "read", "arguments": {"path": "src/a.py", "lines": [1, 20]}},
                {"name": "read", "arguments": {"path": "b.py"}},
            ],
        }
    )
    events = await collect(clients(fake.url), tools=[READ], model="other", temperature=0.3)
    calls = calls_of(events)
    assert [(c.name, c.arguments) for c in calls] == [
        ("read", {"path": "src/a.py", "lines": [1, 20]}),
        ("read", {"path": "b.py"}),
    ]
    assert all(c.error is None and c.id for c in calls) and calls[0].id != calls[1].id
    assert events[-1] == Finished(reason="tool_calls")
    # text comes before the calls, usage before the end
    kinds = [e.kind for e in events]
    assert (
        kinds.index("text")
        < kinds.index("tool_call")
        < kinds.index("usage")
        < kinds.index("finished")
    )
    body = fake.chat_requests()[0]["body"]
    assert body["tools"][0]["function"]["name"] == "read" and body["tool_choice"] == "auto"
    assert body["model"] == "other" and body["temperature"] == 0.3


async def test_garbage_tool_arguments_are_reported_not_fatal(fake: Any, clients: Any) -> None:
    fake.push({"tool_calls": [{"name": "read", "arguments": '{"path": "a.py", '}]})
    events = await collect(clients(fake.url), tools=[READ])
    (call,) = calls_of(events)
    assert call.arguments == {} and call.raw_arguments == '{"path": "a.py", '
    assert call.error and "not valid JSON" in call.error
    assert isinstance(events[-1], Finished)


async def test_history_with_tool_results_is_sent(fake: Any, clients: Any) -> None:
    call = ToolCall.from_raw("call_9", "read", '{"path": "a"}')
    history = [
        Message.user("read a"),
        Message.assistant(None, [call]),
        Message.tool("call_9", "content of a"),
    ]
    events = [e async for e in clients(fake.url).stream(history, [READ])]
    assert text_of(events) == "done"  # script exhausted: default text
    sent = fake.chat_requests()[0]["body"]["messages"]
    assert sent[1]["tool_calls"][0]["id"] == "call_9" and sent[2] == {
        "role": "tool",
        "content": "content of a",
        "tool_call_id": "call_9",
    }


async def test_server_ignoring_include_usage_is_fine(fake: Any, clients: Any) -> None:
    fake.push({"text": "ok", "usage": False})
    events = await collect(clients(fake.url))
    assert not any(isinstance(e, UsageEvent) for e in events) and events[-1] == Finished(
        reason="stop"
    )


async def test_server_rejecting_stream_options_gets_a_retry_without_it(
    fake: Any, clients: Any
) -> None:
    fake.push(
        {
            "status": 400,
            "body": {"error": {"message": "Unrecognized request argument: stream_options"}},
        }
    )
    fake.push({"text": "fine"})
    client = clients(fake.url)
    assert text_of(await collect(client)) == "fine"
    assert text_of(await collect(client)) == "done"
    reqs = fake.chat_requests()
    assert "stream_options" in reqs[0]["body"] and all(
        "stream_options" not in r["body"] for r in reqs[1:]
    )


async def test_huge_answer_streams_whole(fake: Any, clients: Any) -> None:
    fake.push({"huge": 1_000_000})
    events = await collect(clients(fake.url))
    assert len(text_of(events)) == 1_000_000


async def test_connection_refused_names_the_url(clients: Any, closed_port_url: str) -> None:
    with pytest.raises(ModelUnreachable) as info:
        await collect(clients(closed_port_url, max_retries=1))
    assert str(info.value) == (
        f"model endpoint {closed_port_url} is unreachable (connection refused) after 1 retry; "
        "start the model server (e.g. Ollama) or set NDOMO_BASE_URL; see `ndomo health`"
    )
    assert "\n" not in str(info.value)


async def test_unknown_host_is_unreachable(clients: Any) -> None:
    with pytest.raises(
        ModelUnreachable, match=r"model endpoint http://no-such-host\.invalid/v1 is unreachable"
    ):
        await collect(clients("http://no-such-host.invalid/v1", max_retries=0))


async def test_401_is_an_auth_error_naming_the_variable(clients: Any) -> None:
    with __import__("tests.fakes.fake_model", fromlist=["FakeModel"]).FakeModel(
        api_key="right"
    ) as fake:
        with pytest.raises(ModelAuthError) as info:
            await collect(clients(fake.url, env={"NDOMO_API_KEY": "wrong"}))
        assert str(info.value) == (
            f"model endpoint {fake.url} rejected the API key (401: Incorrect API key provided); "
            "set NDOMO_API_KEY or model.api_key_env"
        )
        assert len(fake.chat_requests()) == 1  # not retried
        assert text_of(await collect(clients(fake.url, env={"NDOMO_API_KEY": "right"}))) == "done"


async def test_429_twice_then_ok_succeeds_after_retries(fake: Any, clients: Any) -> None:
    fake.push({"status": 429, "headers": {"retry-after-ms": "1"}})
    fake.push({"status": 429, "headers": {"retry-after-ms": "1"}})
    fake.push({"text": "finally"})
    assert text_of(await collect(clients(fake.url, max_retries=2))) == "finally"
    assert len(fake.chat_requests()) == 3


async def test_429_always_is_rate_limited(fake: Any, clients: Any) -> None:
    for _ in range(3):
        fake.push({"status": 429, "headers": {"retry-after-ms": "1"}})
    with pytest.raises(
        ModelRateLimited,
        match=r"rate limiting requests \(429: Rate limit reached, please retry later\) "
        r"after 2 retries; retry after 0.001s",
    ):
        await collect(clients(fake.url, max_retries=2))
    assert len(fake.chat_requests()) == 3


async def test_retry_after_is_honoured(fake: Any, clients: Any, monkeypatch: Any) -> None:
    from ndomo.llm import transport

    fake.push({"status": 429, "headers": {"Retry-After": "0.2"}})
    fake.push({"status": 503, "headers": {"retry-after-ms": "10"}})
    waits: list[float] = []
    real = transport.retry_wait

    def spy(*args: Any, **kw: Any) -> float:
        waits.append(real(*args, **kw))
        return waits[-1]

    monkeypatch.setattr(transport, "retry_wait", spy)
    assert text_of(await collect(clients(fake.url, max_retries=3))) == "done"
    assert waits == [0.2, 0.01] and len(fake.chat_requests()) == 3


async def test_retry_after_too_long_is_reported_not_waited(fake: Any, clients: Any) -> None:
    fake.push({"status": 429, "headers": {"Retry-After": "600"}})
    with pytest.raises(ModelRateLimited) as info:
        await collect(clients(fake.url, max_retries=2))
    assert info.value.retry_after == 600 and "retry after 600s" in str(info.value)
    assert len(fake.chat_requests()) == 1


async def test_500_always_is_a_server_error(fake: Any, clients: Any) -> None:
    for _ in range(2):
        fake.push({"status": 500, "headers": {"retry-after-ms": "1"}})
    with pytest.raises(
        ModelServerError,
        match=r"failed \(500\) after 1 retry: internal server error; see the model",
    ):
        await collect(clients(fake.url, max_retries=1))


async def test_unknown_model_404_names_the_model(clients: Any) -> None:
    from tests.fakes.fake_model import FakeModel

    with (
        FakeModel(models=["a"], strict_models=True) as fake,
        pytest.raises(
            ModelBadResponse,
            match=r"does not know model 'nope' \(404: The model 'nope' does not exist\); check model.name",
        ),
    ):
        await collect(clients(fake.url, name="nope"))


async def test_wrong_base_path_404_points_at_base_url(fake: Any, clients: Any) -> None:
    with pytest.raises(
        ModelBadResponse,
        match=r"no chat completions route \(404: no route /api/chat/completions\); check model.base_url",
    ):
        await collect(clients(fake.url.removesuffix("/v1") + "/api"))


async def test_stream_cut_midway_is_bad_response(fake: Any, clients: Any) -> None:
    fake.push({"text": "a long answer in pieces", "chunks": 5, "cut": True})
    seen: list[Any] = []
    with pytest.raises(ModelBadResponse, match="cut the stream off mid-answer"):
        async for e in clients(fake.url).stream([Message.user("hi")], []):
            seen.append(e)
    assert text_of(seen)  # the first pieces did arrive


async def test_garbage_body_is_bad_response(fake: Any, clients: Any) -> None:
    fake.push({"garbage": True})
    with pytest.raises(
        ModelBadResponse, match=r"answered with content-type text/html instead of an event stream"
    ):
        await collect(clients(fake.url))


async def test_slow_server_times_out(fake: Any, clients: Any) -> None:
    fake.push({"delay": 5, "text": "late"})
    with pytest.raises(ModelTimeout, match=r"did not answer within 0.3s; raise model.timeout_s"):
        await collect(clients(fake.url, timeout_s=0.3, max_retries=0))
    assert len(fake.chat_requests()) == 1


async def test_cancelling_a_waiting_stream_closes_the_connection(fake: Any, clients: Any) -> None:
    fake.push({"delay": 30, "text": "too late"})
    task = asyncio.create_task(collect(clients(fake.url)))
    while not fake.chat_requests():
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # The fake notices the hang-up while still inside its 30 s delay.
    assert await asyncio.to_thread(fake.wait_for_disconnect, 10.0)


async def test_leaving_a_stream_early_closes_the_connection(fake: Any, clients: Any) -> None:
    fake.push({"text": "a b c d e f", "chunks": 6, "chunk_delay": 5})
    fake.push({"text": "next"})
    client = clients(fake.url)
    async with contextlib.aclosing(client.stream([Message.user("hi")], [])) as events:
        async for e in events:
            if isinstance(e, TextChunk):
                break
    assert await asyncio.to_thread(fake.wait_for_disconnect, 10.0)
    assert text_of(await collect(client)) == "next"  # the client is still usable


async def test_a_held_stream_sends_its_first_piece_then_waits_for_the_file(
    fake: Any, clients: Any, tmp_path: Any
) -> None:
    """The fake's `hold_until`: a slow model whose rest a test lets go on (no timing)."""
    gate = tmp_path / "go"
    fake.push({"text": "first second", "chunks": 2, "hold_until": str(gate)})
    seen: list[str] = []
    async with contextlib.aclosing(clients(fake.url).stream([Message.user("hi")], [])) as events:
        async for e in events:
            if isinstance(e, TextChunk):
                seen.append(e.text)
                if len(seen) == 1:
                    assert not gate.exists()
                    gate.touch()  # only now may the second piece come
    assert "".join(seen) == "first second" and len(seen) == 2


async def test_probe_ok_lists_models(fake: Any, clients: Any) -> None:
    probe = await clients(fake.url).probe()
    assert probe.ok and probe.url == fake.url and probe.models == ["fake-model", "other"]
    assert "'fake-model' available" in probe.detail
    assert fake.requests[0]["path"] == "/v1/models"
    missing = await clients(fake.url, name="ghost").probe()
    assert missing.ok and "'ghost' is not among them" in missing.detail


async def test_probe_refused_reports_without_raising(clients: Any, closed_port_url: str) -> None:
    probe = await clients(closed_port_url).probe()
    assert not probe.ok and probe.models == []
    assert probe.detail == (
        f"model endpoint {closed_port_url} is unreachable (connection refused); "
        "start the model server (e.g. Ollama) or set NDOMO_BASE_URL; see `ndomo health`"
    )


async def test_probe_bad_key(clients: Any) -> None:
    from tests.fakes.fake_model import FakeModel

    with FakeModel(api_key="k") as fake:
        probe = await clients(fake.url).probe()
    assert not probe.ok and "rejected the API key (401: Incorrect API key provided)" in probe.detail


def test_make_client_picks_openai_by_default() -> None:
    client = make_client(ModelConfig(base_url="http://127.0.0.1:1/v1/"), probe_timeout_s=1.0)
    assert isinstance(client, OpenAIClient) and client.url == "http://127.0.0.1:1/v1"
    assert client._http.max_retries == 2  # the default retry budget, as the SDK's
