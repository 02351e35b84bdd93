from __future__ import annotations

import pytest
from pydantic import TypeAdapter, ValidationError

from ndomo.llm.assembly import ToolCallAssembler
from ndomo.llm.messages import (
    Finished,
    Message,
    StreamEvent,
    TextChunk,
    ToolCall,
    ToolSpec,
    parse_arguments,
)
from ndomo.llm.openai_client import to_openai_messages, to_openai_tools


def test_parse_arguments_accepts_object_and_empty() -> None:
    assert parse_arguments('{"a": 1}') == ({"a": 1}, None)
    assert parse_arguments("  ") == ({}, None)


@pytest.mark.parametrize(
    "raw, fragment", [('{"a": ', "not valid JSON"), ("[1, 2]", "got list"), ('"x"', "got str")]
)
def test_parse_arguments_reports_bad_payloads(raw: str, fragment: str) -> None:
    args, error = parse_arguments(raw)
    assert args == {} and error is not None and fragment in error


def test_tool_call_wire_arguments_never_sends_invalid_json() -> None:
    bad = ToolCall.from_raw("c1", "read", "{oops")
    assert bad.error and bad.raw_arguments == "{oops" and bad.wire_arguments() == "{}"
    good = ToolCall.from_raw("c2", "read", '{"path": "a"}')
    assert good.error is None and good.wire_arguments() == '{"path": "a"}'
    assert (
        ToolCall.from_raw("c3", "", "{}").error == "the model sent a tool call without a tool name"
    )


def test_tool_spec_rejects_names_servers_refuse() -> None:
    with pytest.raises(ValidationError):
        ToolSpec(name="read file")


def test_stream_events_round_trip_through_discriminator() -> None:
    adapter = TypeAdapter(list[StreamEvent])
    events = [TextChunk(text="a"), Finished(reason="stop")]
    assert adapter.validate_python(adapter.dump_python(events)) == events


def test_openai_wire_format_for_history() -> None:
    call = ToolCall.from_raw("call_1", "read", '{"path": "x.py"}')
    wire = to_openai_messages(
        [
            Message.system("be brief"),
            Message.user("read x"),
            Message.assistant(None, [call]),
            Message.tool("call_1", "print(1)", name="read"),
            Message.assistant("done"),
        ]
    )
    assert wire[0] == {"role": "system", "content": "be brief"}
    assert wire[2] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "read", "arguments": '{"path": "x.py"}'},
            }
        ],
    }
    assert wire[3] == {"role": "tool", "content": "print(1)", "tool_call_id": "call_1"}
    assert wire[4] == {"role": "assistant", "content": "done"}
    assert to_openai_tools([ToolSpec(name="ls")])[0]["function"]["parameters"]["type"] == "object"


def test_assembler_orders_by_index_and_joins_fragments() -> None:
    asm = ToolCallAssembler()
    asm.add(0, "a", "read", "")
    asm.add(1, "b", "ls", '{"di')
    asm.add(0, None, None, '{"path"')
    asm.add(0, None, None, ': "x"}')
    asm.add(1, None, None, 'r": "."}')
    calls = asm.finish()
    assert [(c.id, c.name, c.arguments) for c in calls] == [
        ("a", "read", {"path": "x"}),
        ("b", "ls", {"dir": "."}),
    ]
    assert not asm


def test_assembler_handles_servers_reusing_index_zero_and_missing_ids() -> None:
    asm = ToolCallAssembler()
    asm.add(0, "a", "read", '{"path": "1"}')
    asm.add(0, "b", "read", '{"path": "2"}')  # same index, new id: a second call
    asm.add(None, None, "ls", "{}")  # no index, no id, but a name: a new call
    calls = asm.finish()
    assert [c.arguments.get("path") for c in calls[:2]] == ["1", "2"]
    assert [c.name for c in calls] == ["read", "read", "ls"] and calls[2].error is None
    assert all(c.id for c in calls)
