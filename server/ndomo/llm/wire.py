"""Messages and tools in the OpenAI chat wire format: what the OpenAI-compatible client
sends, and the fixed measure the budget sizes every request by (whatever the provider)."""

from __future__ import annotations

from typing import Any

from .messages import Message, ToolSpec


def to_openai_messages(messages: list[Message]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for m in messages:
        item: dict[str, Any] = {"role": m.role}
        if m.role == "assistant" and m.tool_calls:
            item["content"] = m.content or None
            item["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.wire_arguments()},
                }
                for c in m.tool_calls
            ]
        else:
            item["content"] = m.content or ""
        if m.role == "tool":
            item["tool_call_id"] = m.tool_call_id or ""
        if m.name and m.role in ("user", "system"):
            item["name"] = m.name
        out.append(item)
    return out


def to_openai_tools(tools: list[ToolSpec]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
        }
        for t in tools
    ]
