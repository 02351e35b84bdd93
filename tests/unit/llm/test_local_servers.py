"""What real local servers do, against the fake that imitates them over real HTTP."""

from __future__ import annotations

from typing import Any

import pytest

from ndomo.llm import (
    Finished,
    ModelBadResponse,
    ModelContextExceeded,
    ModelEmptyStream,
    ModelToolsUnsupported,
    TextChunk,
    ToolCallReady,
    UsageEvent,
)
from ndomo.llm.budget import request_size
from ndomo.llm.messages import Message
from tests.fakes.fake_model import FakeModel

from .conftest import READ, collect


def calls_of(events: list[Any]) -> list[str]:
    return [e.call.name for e in events if isinstance(e, ToolCallReady)]


async def test_server_that_cannot_stream_tool_calls_gets_the_request_again_whole(
    clients: Any,
) -> None:
    with FakeModel(stream_tools=False) as fake:
        fake.push({"text": "reading", "tool_calls": [{"name": "read", "arguments": {"path": "a"}}]})
        client = clients(fake.url)
        events = await collect(client, tools=[READ])
        assert calls_of(events) == ["read"]
        assert "".join(e.text for e in events if isinstance(e, TextChunk)) == "reading"
        assert events[-1] == Finished(reason="tool_calls")
        assert [r["body"]["stream"] for r in fake.chat_requests()] == [True, False]
        assert client.caps.stream_tools is False and client.caps.tools is True
        # learned: the next request with tools is not streamed at all; one without tools still is
        await collect(client, tools=[READ])
        await collect(client)
        assert [r["body"]["stream"] for r in fake.chat_requests()[2:]] == [False, True]


async def test_stream_false_never_streams_and_true_never_falls_back(clients: Any) -> None:
    with FakeModel(stream_tools=False) as fake:
        await collect(clients(fake.url, stream=False))
        assert fake.chat_requests()[0]["body"]["stream"] is False
        with pytest.raises(ModelEmptyStream, match="ended it without a single chunk"):
            await collect(clients(fake.url, stream=True), tools=[READ])
        assert len(fake.chat_requests()) == 2


async def test_empty_stream_says_so_not_that_it_is_not_a_stream(fake: Any, clients: Any) -> None:
    fake.push({"empty": True})
    with pytest.raises(ModelEmptyStream) as info:
        await collect(clients(fake.url))
    text = str(info.value)
    assert "opened an event stream and ended it without a single chunk" in text
    assert "not a chat completion stream" not in text and "set model.stream" in text


async def test_error_event_inside_a_stream_shows_the_servers_message(
    fake: Any, clients: Any
) -> None:
    fake.push({"text": "partial answer", "stream_error": "slot 0 crashed: out of memory"})
    with pytest.raises(
        ModelBadResponse, match=r"error event mid-stream: slot 0 crashed: out of memory; see the"
    ):
        await collect(clients(fake.url))


@pytest.mark.parametrize("wording", ["llamacpp", "openai"])
async def test_context_limit_error_is_typed_with_the_window(clients: Any, wording: str) -> None:
    with FakeModel(n_ctx=300, context_error=wording) as fake:
        big = "x" * 4000
        with pytest.raises(ModelContextExceeded) as info:
            await collect(clients(fake.url), prompt=big)
        assert (
            info.value.window == 300 and info.value.prompt_tokens and info.value.prompt_tokens > 300
        )
        assert "larger than its context window (400: " in str(info.value)
        assert (
            "exceeds the available context size"
            if wording == "llamacpp"
            else "maximum context length is 300"
        ) in str(info.value)
        assert len(fake.chat_requests()) == 1  # a 400 is not retried


async def test_tool_less_model_is_reported_as_such(clients: Any) -> None:
    with FakeModel(tools=False) as fake:
        client = clients(fake.url)
        with pytest.raises(
            ModelToolsUnsupported,
            match=r"model 'fake-model' at .* does not support tool calling \(400: "
            r"registry.ollama.ai/library/fake-model does not support tools\)",
        ):
            await collect(client, tools=[READ])
        assert client.caps.tools is False
        assert len(fake.chat_requests()) == 1  # not "fixed" by dropping streaming
        events = await collect(client)  # without tools it answers
        assert events[-1] == Finished(reason="stop")


async def test_llama_cpp_without_jinja_is_a_server_without_tools(fake: Any, clients: Any) -> None:
    """llama-server started with --no-jinja answers a request with tools with a 500."""
    error = {"code": 500, "message": "tools param requires --jinja flag", "type": "server_error"}
    fake.push({"status": 500, "body": {"error": error}})
    client = clients(fake.url, max_retries=0)  # the server's answer does not change on a retry
    with pytest.raises(ModelToolsUnsupported, match="start llama-server with --jinja"):
        await collect(client, tools=[READ])
    assert client.caps.tools is False
    assert client.caps.tools_source == "the server refused tools: tools param requires --jinja flag"


async def test_usage_prompt_tokens_calibrates_bytes_per_token(fake: Any, clients: Any) -> None:
    client = clients(fake.url)
    events = await collect(client, prompt="y" * 2000, tools=[READ])
    usage = next(e.usage for e in events if isinstance(e, UsageEvent))
    size = request_size([Message.user("y" * 2000)], [READ])
    assert usage.prompt_tokens == size // 4  # the fake counts bytes / 4
    assert client.caps.bytes_per_token == pytest.approx(size / usage.prompt_tokens, rel=1e-3)


async def test_learns_the_window_from_llama_cpp_props(clients: Any) -> None:
    with FakeModel(props=True, n_ctx=4096) as fake:
        caps = await clients(fake.url).learn()
    assert caps.context_window == 4096 and caps.context_source == "/props n_ctx"


async def test_a_llama_cpp_template_without_tools_means_no_tools(clients: Any) -> None:
    """llama.cpp drops `tools` its chat template does not render, silently: /props says so."""
    no_tools = {"chat_template_caps": {"supports_tools": False}, "build_info": "b1-abc"}
    with FakeModel(props=no_tools) as fake:
        client = clients(fake.url)
        caps = await client.learn()
        facts = await client.server_facts()
    assert caps.tools is False and "chat_template_caps.supports_tools" in (caps.tools_source or "")
    assert facts["server"] == "llama.cpp b1-abc"
    assert "tools: no (llama.cpp's chat template renders no tools" in caps.describe()
    # the server restarted with a template that renders tools: its new report wins
    with FakeModel(props={"chat_template_caps": {"supports_tools": True}}) as fake:
        again = clients(fake.url)
        again.caps = caps.model_copy()
        assert (await again.learn()).tools is None


async def test_a_tools_refusal_from_a_request_stands_against_a_report(clients: Any) -> None:
    with FakeModel(props={"chat_template_caps": {"supports_tools": True}}) as fake:
        client = clients(fake.url)
        client.caps.tools, client.caps.tools_source = False, "the server refused tools: x"
        assert (await client.learn()).tools is False


async def test_learns_the_window_from_vllm_max_model_len(clients: Any) -> None:
    with FakeModel(max_model_len=16384) as fake:
        caps = await clients(fake.url).learn()
    assert caps.context_window == 16384 and "max_model_len" in caps.context_source


async def test_learns_num_ctx_and_tool_support_from_ollama_api_show(clients: Any) -> None:
    with FakeModel(
        ollama={"num_ctx": 8192, "context_length": 131072, "capabilities": ["completion"]}
    ) as fake:
        caps = await clients(fake.url).learn()
        show = [r for r in fake.requests if r["path"] == "/api/show"]
    assert caps.context_window == 8192 and caps.context_source == "Ollama num_ctx"
    assert caps.tools is False and show[0]["body"] == {"model": "fake-model"}


async def test_ollama_without_num_ctx_means_its_default(clients: Any) -> None:
    with FakeModel(ollama={"context_length": 131072}) as fake:
        caps = await clients(fake.url).learn()
    assert caps.context_window == 4096 and "default" in caps.context_source and caps.tools is None


async def test_a_plain_server_says_nothing_and_learning_does_not_fail(
    fake: Any, clients: Any
) -> None:
    caps = await clients(fake.url).learn()
    assert caps.context_window is None
