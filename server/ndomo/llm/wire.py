"""Messages and tools in the OpenAI chat wire format: what the OpenAI-compatible client
sends, and the fixed measure the budget sizes every request by (whatever the provider)."""

from __future__ import annotations

import json
from typing import Any

from .messages import Message, ToolSpec

# Each offered tool's JSON, across requests: an agent's tools in a mode are offered as the
# same specs every turn (`runtime.tools.tool_specs`, their schemas from the schema cache),
# ~9 KB of JSON that every request serialised again, and its fit twice more (the offered
# list and its core subset). Keyed by name, description and the parameters object; an
# entry holds that object, so its id is no other object's while the entry is kept.
TOOLS_JSON_MAX = 512
_tools_json: dict[tuple[str, str, int], tuple[str, int, Any]] = {}


def _dumps(value: Any) -> str:
    """Compact JSON, as the request is sent."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


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


def tool_json(item: dict[str, Any]) -> tuple[str, int]:
    """One `to_openai_tools` item as the request's JSON, and its size in UTF-8 bytes."""
    fn = item["function"]
    key = (fn["name"], fn["description"], id(fn["parameters"]))
    hit = _tools_json.get(key)
    if hit is None:
        if len(_tools_json) >= TOOLS_JSON_MAX:
            _tools_json.clear()
        text = _dumps(item)
        hit = _tools_json[key] = (text, len(text.encode("utf-8")), fn["parameters"])
    return hit[0], hit[1]


def tools_json_size(items: list[dict[str, Any]]) -> int:
    """Bytes of `to_openai_tools` items as the request's JSON list."""
    return 1 + len(items) + sum(tool_json(i)[1] for i in items) if items else 2


def chat_body(params: dict[str, Any]) -> bytes:
    """The chat request's JSON body (compact, UTF-8): `params`, its `tools` (items of
    `to_openai_tools`) written from `tool_json`; the same JSON, with `tools` last."""
    tools = params.get("tools")
    if not tools:
        return _dumps(params).encode("utf-8")
    rest = _dumps({k: v for k, v in params.items() if k != "tools"})
    listed = ",".join(tool_json(i)[0] for i in tools)
    return f'{rest[:-1]}{"," if len(rest) > 2 else ""}"tools":[{listed}]}}'.encode()
