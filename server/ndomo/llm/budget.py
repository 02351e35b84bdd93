"""Fit a request into the model's context window before it is sent.

No tokenizer works offline, so the size of a request is its JSON in bytes (messages +
tools, compact UTF-8: what the OpenAI SDK sends) turned into tokens by a ratio the
server's `usage.prompt_tokens` calibrates. What gives way, in order: old history by whole
exchanges, then the tool list (the mode's and agent's core set), then the system prompt
(a compact one). If even that does not fit, the turn fails before sending.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from .capabilities import estimate_tokens
from .errors import ModelContextTooSmall
from .messages import Message, ToolSpec
from .wire import to_openai_messages, to_openai_tools, tools_json_size


def _wire_messages(messages: Sequence[Message]) -> list[dict]:
    return to_openai_messages(list(messages))


def _wire_tools(tools: Sequence[ToolSpec]) -> list[dict]:
    return to_openai_tools(list(tools))


def json_size(value: object) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def request_size(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> int:
    """Bytes of `messages` + `tools` as JSON (compact, UTF-8): the fixed, checkable proxy."""
    return json_size(_wire_messages(messages)) + (json_size(_wire_tools(tools)) if tools else 0)


# Sizes by content, across turns: a turn reads its history from the store anew (new objects,
# so a fit's `Sizes` cannot carry them over), and in a small window every request measured
# the same ~20-30 messages again before it left (Stop 39 in docs/performance.md). Bounded:
# at most MEASURED_MAX entries, each holding at most MEASURED_TEXT text; a longer message is
# measured each time, its JSON costing little next to its own size.
MEASURED_MAX = 1024
MEASURED_TEXT = 4096
_measured: dict[tuple, int] = {}


def wire_size(message: Message) -> int:
    """Bytes `message` adds to the request's JSON list: its object and one separator."""
    calls = tuple((c.id, c.name, c.wire_arguments()) for c in message.tool_calls)
    if len(message.content or "") + sum(len(c[2]) for c in calls) > MEASURED_TEXT:
        return _measure(message)
    key = (message.role, message.content, message.tool_call_id, message.name, calls)
    size = _measured.get(key)
    if size is None:
        size = _measure(message)
        if len(_measured) >= MEASURED_MAX:
            _measured.clear()  # a turn measures again what it keeps: a few dozen messages
        _measured[key] = size
    return size


def _measure(message: Message) -> int:
    return json_size(to_openai_messages([message])[0]) + 1


def tools_wire_size(tools: Sequence[ToolSpec]) -> int:
    """Bytes of `tools` as the request's JSON list (0 for none): `json_size` of the list,
    each tool measured once across turns (`wire.tool_json`)."""
    return tools_json_size(_wire_tools(tools)) if tools else 0


def drop_exchanges(
    messages: list[Message], cost: Callable[[Message], int], fits: Callable[[int], bool]
) -> list[Message]:
    """Drop whole exchanges (a user message and everything up to the next one) from the
    front until `fits` says yes to the kept messages' summed `cost`; leading system
    messages and the latest exchange stay. Returns the shortest candidate when nothing fits,
    so the caller can decide.

    Walks from the newest exchange back and stops at the first that does not fit, so a
    turn's cost follows what is kept (the window), not how long the session has run: at
    turn 100 with a 4,096-token window, measuring every candidate whole made a turn 4×
    its cost at turn 10.
    """
    head = 0
    while head < len(messages) and messages[head].role == "system":
        head += 1
    total = sum(cost(m) for m in messages[:head])
    latest: int | None = None  # the newest user message: the shortest candidate starts there
    oldest: int | None = None  # the oldest user message whose exchanges all fit
    for i in range(len(messages) - 1, head - 1, -1):
        total += cost(messages[i])
        if messages[i].role != "user":
            continue
        latest = i if latest is None else latest
        if not fits(total):
            break
        oldest = i
    start = oldest if oldest is not None else latest
    if start is None:  # no user message: nothing to cut at
        return messages
    return messages[:head] + messages[start:]


def chars(m: Message) -> int:
    """A message's characters of content: its text, each call's name and arguments."""
    return len(m.content or "") + sum(len(c.name) + len(c.wire_arguments()) for c in m.tool_calls)


def trim_to_chars(messages: list[Message], budget: int) -> list[Message]:
    """Whole-exchange trimming by characters of content (the session history cap)."""
    return drop_exchanges(messages, chars, lambda total: total <= budget)


@dataclass
class Window:
    """The context window a request must fit: tokens, where the number came from, and
    how many tokens are kept free for the answer."""

    tokens: int
    source: str
    bytes_per_token: float | None = None
    setting: str = "model.context_window"

    @property
    def reserve(self) -> int:
        return min(1024, self.tokens // 4)

    @property
    def input_tokens(self) -> int:
        return self.tokens - self.reserve

    def estimate(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> int:
        return self.tokens_for(request_size(messages, tools))

    def tokens_for(self, size: int) -> int:
        return estimate_tokens(size, self.bytes_per_token)


@dataclass
class Fitted:
    messages: list[Message]
    tools: list[ToolSpec]
    window: Window | None = None
    steps: list[str] = field(default_factory=list)  # what gave way, for a notice
    estimated: int | None = None  # the fit's own estimate of the request, when it made one

    # Measured only when asked (a context error): serialising the whole request costs
    # time before every model call otherwise, and the first token waits for it.
    @cached_property
    def size(self) -> int:
        return request_size(self.messages, self.tools)

    @cached_property
    def tokens(self) -> int:
        if self.estimated is not None:
            return self.estimated
        if self.window is not None:
            return self.window.estimate(self.messages, self.tools)
        return estimate_tokens(self.size)

    def output_cap(self, most: int) -> int:
        """The `max_tokens` to send: `most`, or less when the window leaves less room after
        the request (known only with a window; the fit kept at least `reserve` free)."""
        if self.window is None or self.estimated is None:
            return most
        return max(1, min(most, self.window.tokens - self.estimated))


@dataclass
class Sizes:
    """Wire sizes measured by one `fit`, by object: a second fit of the same turn (with the
    compaction anchor in) measures only what is new. Keyed by `id`, so it lives no longer
    than the messages and tool lists it measured (one `fit_request`)."""

    messages: dict[int, int] = field(default_factory=dict)
    tools: dict[int, int] = field(default_factory=dict)


def fit(
    messages: list[Message],
    tools: list[ToolSpec],
    window: Window | None,
    *,
    core_tools: list[ToolSpec] | None = None,
    compact_system: str | None = None,
    sizes: Sizes | None = None,
) -> Fitted:
    """The request to send: `messages` (system first) and `tools`, cut down until it fits.
    `sizes`: what an earlier fit of these objects measured (filled in here)."""

    def done(ms: list[Message], ts: list[ToolSpec], steps: list[str]) -> Fitted:
        return Fitted(ms, ts, window, steps, estimated)

    estimated: int | None = None
    if window is None:
        return done(messages, tools, [])
    limit = window.input_tokens
    # Each message and each tool list is measured once per fit (once per turn with `sizes`;
    # a message or a tool already measured in an earlier turn is not serialised again,
    # `wire_size`, `tools_wire_size`): the first token waits for this, and every estimate
    # below is a sum of these sizes, equal to `request_size`.
    memo = sizes if sizes is not None else Sizes()
    message_sizes, tool_sizes = memo.messages, memo.tools

    def cost(m: Message) -> int:
        size = message_sizes.get(id(m))
        if size is None:
            size = message_sizes[id(m)] = wire_size(m)
        return size

    def tools_bytes(ts: list[ToolSpec]) -> int:
        size = tool_sizes.get(id(ts))
        if size is None:
            size = tool_sizes[id(ts)] = tools_wire_size(ts)
        return size

    def fits_with(ts: list[ToolSpec]) -> Callable[[list[Message]], bool]:
        ts_size = tools_bytes(ts)

        def fits(ms: list[Message]) -> bool:
            nonlocal estimated
            # the messages' JSON list: 1 + the sum of each message's wire_size (object +
            # separator), "[]" when empty
            listed = 1 + sum(cost(m) for m in ms) if ms else 2
            estimated = window.tokens_for(listed + ts_size)
            return estimated <= limit

        return fits

    steps: list[str] = []
    tools_size = tools_bytes(tools)
    trimmed = drop_exchanges(
        messages, cost, lambda total: window.tokens_for(1 + total + tools_size) <= limit
    )
    if len(trimmed) < len(messages):
        steps.append(f"dropped {len(messages) - len(trimmed)} older messages")
    if fits_with(tools)(trimmed):
        return done(trimmed, tools, steps)
    if core_tools is not None and len(core_tools) < len(tools):
        tools = core_tools
        steps.append(f"offered only the core tools ({', '.join(t.name for t in tools)})")
        if fits_with(tools)(trimmed):
            return done(trimmed, tools, steps)
    if compact_system is not None and trimmed and trimmed[0].role == "system":
        trimmed = [Message.system(compact_system), *trimmed[1:]]
        steps.append("used the compact system prompt")
        if fits_with(tools)(trimmed):
            return done(trimmed, tools, steps)
    need = window.estimate(trimmed, tools)
    raise ModelContextTooSmall(
        f"the request does not fit the model's context window: about {need} tokens "
        f"({request_size(trimmed, tools)} bytes, even after {', '.join(steps) or 'trimming'}) against a window of "
        f"{window.tokens} tokens ({window.source}) with {window.reserve} kept for the answer; raise the server's "
        f"context size and set {window.setting} to match"
    )
