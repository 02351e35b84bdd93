from __future__ import annotations

import sys

import pytest

from ndomo.config import ModelConfig
from ndomo.llm import Message, ModelError, ToolCall, ToolSpec, make_client
from ndomo.llm.anthropic_client import to_anthropic, to_anthropic_tools


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
        {"name": "ls", "description": "list", "input_schema": {"type": "object", "properties": {}},
         "cache_control": {"type": "ephemeral"}}  # the last tool closes the cached prefix
    ]
