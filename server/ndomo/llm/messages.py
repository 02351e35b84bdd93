"""Provider-neutral chat messages, tool specs and stream events.

Agents and the runtime speak only these types, so a provider can be swapped
without touching them; each client converts to its wire format at the edge.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field

from ndomo.schema import Schema

Role = Literal["system", "user", "assistant", "tool"]


class _Model(Schema):
    model_config = ConfigDict(extra="forbid")


def parse_arguments(raw: str) -> tuple[dict[str, Any], str | None]:
    """Decode a model's tool arguments; a bad payload becomes an error, not an exception.

    The model gets the error back as the tool result and can correct itself, so
    one malformed call never ends a turn.
    """
    if not raw.strip():
        return {}, None  # many servers send "" for a call without arguments
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        return {}, f"arguments are not valid JSON ({exc.msg} at char {exc.pos})"
    if not isinstance(value, dict):
        return {}, f"arguments must be a JSON object, got {type(value).__name__}"
    where = _lone_surrogate(value)
    if where is not None:
        return {}, (
            f"arguments hold a lone surrogate ({where}): JSON allows a \\ud800-style escape "
            "that is half of a character and no text; send whole characters"
        )
    return value, None


def _lone_surrogate(value: Any, at: str = "") -> str | None:
    """Where a string in ``value`` holds a lone UTF-16 surrogate (not encodable as UTF-8)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            return f"{at or 'a value'} at character {exc.start}"
        return None
    if isinstance(value, dict):
        for k, v in value.items():
            found = _lone_surrogate(k, f"{at}.key") or _lone_surrogate(v, f"{at}.{k}" if at else k)
            if found:
                return found
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found = _lone_surrogate(v, f"{at}[{i}]")
            if found:
                return found
    return None


class ToolCall(_Model):
    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    raw_arguments: str = ""
    error: str | None = None

    @classmethod
    def from_raw(cls, id: str, name: str, raw: str) -> ToolCall:
        arguments, error = parse_arguments(raw)
        if not name and error is None:
            error = "the model sent a tool call without a tool name"
        return cls(id=id, name=name, arguments=arguments, raw_arguments=raw, error=error)

    def wire_arguments(self) -> str:
        """Arguments as sent back in history: never invalid JSON, which servers may reject."""
        if self.error is None and self.raw_arguments.strip():
            return self.raw_arguments
        return json.dumps(self.arguments)


class Message(_Model):
    role: Role
    content: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None

    @classmethod
    def system(cls, text: str) -> Message:
        return cls(role="system", content=text)

    @classmethod
    def user(cls, text: str) -> Message:
        return cls(role="user", content=text)

    @classmethod
    def assistant(cls, text: str | None, tool_calls: list[ToolCall] | None = None) -> Message:
        return cls(role="assistant", content=text, tool_calls=list(tool_calls or []))

    @classmethod
    def tool(cls, call_id: str, content: str, name: str | None = None) -> Message:
        return cls(role="tool", content=content, tool_call_id=call_id, name=name)


class ToolSpec(_Model):
    name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})


class Usage(_Model):
    prompt_tokens: int = 0
    completion_tokens: int = 0


class TextChunk(_Model):
    kind: Literal["text"] = "text"
    text: str


class ThoughtChunk(_Model):
    """Reasoning the server streams beside the answer (`reasoning_content`: llama.cpp,
    vLLM, DeepSeek; `reasoning`: Ollama, OpenRouter): shown, never part of the answer."""

    kind: Literal["thought"] = "thought"
    text: str


class ToolCallReady(_Model):
    kind: Literal["tool_call"] = "tool_call"
    call: ToolCall


class UsageEvent(_Model):
    kind: Literal["usage"] = "usage"
    usage: Usage


class Finished(_Model):
    """Last event of every successful stream; `reason` is "stop", "tool_calls", "length", …"""

    kind: Literal["finished"] = "finished"
    reason: str


StreamEvent = Annotated[
    TextChunk | ThoughtChunk | ToolCallReady | UsageEvent | Finished, Field(discriminator="kind")
]
