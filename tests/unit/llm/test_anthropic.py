from __future__ import annotations

import sys

import pytest

from ndomo.config import ModelConfig
from ndomo.llm import (
    Finished,
    Message,
    ModelBadResponse,
    ModelError,
    ModelRequestRejected,
    TextChunk,
    ToolCall,
    ToolCallReady,
    ToolSpec,
    UsageEvent,
    make_client,
)
from ndomo.llm.anthropic_client import to_anthropic, to_anthropic_tools
from tests.fakes.fake_anthropic import FakeAnthropic


def test_missing_package_gives_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "anthropic", None)  # makes `import anthropic` fail
    with pytest.raises(ModelError) as info:
        make_client(ModelConfig(provider="anthropic"))
    assert str(info.value) == "provider 'anthropic' needs `pip install ndomo[anthropic]`"


def test_message_conversion_merges_tool_results_into_one_user_turn() -> None:
    a = ToolCall.from_raw("t1", "read", '{"path": "a"}')
    b = ToolCall.from_raw("t2", "read", '{"path": "b"}')
    system, wire = to_anthropic(
        [
            Message.system("rules"),
            Message.user("read both"),
            Message.assistant("sure", [a, b]),
            Message.tool("t1", "A"),
            Message.tool("t2", "B"),
            Message.assistant(""),  # empty turns are dropped, not sent
        ]
    )
    assert system == "rules"
    assert wire == [
        {"role": "user", "content": [{"type": "text", "text": "read both"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "sure"},
                {"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "a"}},
                {"type": "tool_use", "id": "t2", "name": "read", "input": {"path": "b"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "A"},
                {"type": "tool_result", "tool_use_id": "t2", "content": "B"},
            ],
        },
    ]
    assert to_anthropic_tools([ToolSpec(name="ls", description="list")]) == [
        {
            "name": "ls",
            "description": "list",
            "input_schema": {"type": "object", "properties": {}},
            "cache_control": {"type": "ephemeral"},
        }  # the last tool closes the cached prefix
    ]


# ---- the streaming path against the scripted fake Anthropic server (real HTTP, real SDK) ----


READ = ToolSpec(
    name="read",
    description="Read a file",
    parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)


async def _run(
    fake: FakeAnthropic, messages: list[Message], tools: list[ToolSpec] | None = None
) -> list:
    client = make_client(
        ModelConfig(
            provider="anthropic", base_url=fake.url, name="claude-fake", api_key="k", max_retries=0
        )
    )
    try:
        return [e async for e in client.stream(messages, tools or [])]
    finally:
        await client.aclose()


async def test_anthropic_streams_text_and_usage() -> None:
    with FakeAnthropic([{"text": "hello there"}]) as fake:
        events = await _run(fake, [Message.system("be brief"), Message.user("hi")])
    assert "".join(e.text for e in events if isinstance(e, TextChunk)) == "hello there"
    assert any(isinstance(e, UsageEvent) and e.usage.prompt_tokens > 0 for e in events)
    assert events[-1] == Finished(reason="stop")


async def test_anthropic_tool_calls_are_assembled_from_json_deltas() -> None:
    step = {
        "text": "let me look",
        "tool_calls": [{"name": "read", "arguments": {"path": "src/a.py"}}],
    }
    with FakeAnthropic([step]) as fake:
        events = await _run(fake, [Message.user("read a")], [READ])
    calls = [e.call for e in events if isinstance(e, ToolCallReady)]
    assert [(c.name, c.arguments) for c in calls] == [("read", {"path": "src/a.py"})]
    assert events[-1] == Finished(reason="tool_calls")


async def test_anthropic_error_event_inside_the_stream_is_reported_with_its_words() -> None:
    with FakeAnthropic([{"text": "partial", "error": "Overloaded"}]) as fake:
        url = fake.url
        with pytest.raises(ModelBadResponse) as info:
            await _run(fake, [Message.user("hi")])
    assert "error event mid-stream (overloaded_error: Overloaded)" in str(info.value)
    assert url in str(info.value)


async def test_anthropic_http_error_carries_the_servers_message() -> None:
    with (
        FakeAnthropic([{"status": 400, "message": "max_tokens: must be positive"}]) as fake,
        pytest.raises(
            ModelRequestRejected,
            match=r"rejected the request \(400\): max_tokens: must be positive",
        ),
    ):
        await _run(fake, [Message.user("hi")])


async def test_anthropic_marks_the_stable_prefix_for_the_prompt_cache() -> None:
    with FakeAnthropic([{"text": "a"}, {"text": "b"}]) as fake:
        for prompt in ("one", "two"):
            await _run(
                fake, [Message.system("the stable system prompt"), Message.user(prompt)], [READ]
            )
        one, two = (r["body"] for r in fake.requests if r["method"] == "POST")
    assert one["system"] == [
        {"type": "text", "text": "the stable system prompt", "cache_control": {"type": "ephemeral"}}
    ]
    assert one["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert one["system"] == two["system"] and one["tools"] == two["tools"]  # byte-identical prefix
    assert one["stream"] is True
