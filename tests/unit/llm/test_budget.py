"""Fitting a request into a context window: what gives way, in which order."""

from __future__ import annotations

import pytest

from ndomo.config import ModelConfig
from ndomo.llm import ModelContextTooSmall
from ndomo.llm.budget import Window, drop_exchanges, fit, request_size, wire_size
from ndomo.llm.messages import Message, ToolCall, ToolSpec

TOOLS = [ToolSpec(name=f"t{i}", description="x" * 200) for i in range(10)]
CORE = TOOLS[:2]


def convo(n: int, size: int = 400) -> list[Message]:
    out = [Message.system("S" * 1000)]
    for i in range(n):
        out += [Message.user(f"q{i} " + "u" * size), Message.assistant("a" * size)]
    out.append(Message.user("latest"))
    return out


def window_for(messages: list[Message], tools: list[ToolSpec], slack: int = 0) -> Window:
    """A window just big enough for this request (bytes/3 tokens, a quarter reserved)."""
    need = request_size(messages, tools) // 3 + 1 + slack
    return Window(tokens=need * 4 // 3 + 2, source="test")


def test_nothing_changes_when_it_fits_or_the_window_is_unknown():
    ms = convo(3)
    assert fit(ms, TOOLS, None).messages == ms
    assert fit(ms, TOOLS, Window(100_000, "test")).steps == []


def test_history_goes_first_by_whole_exchanges():
    ms = convo(6)
    small = [ms[0], *ms[-3:]]  # system + the last exchange + the new prompt
    fitted = fit(ms, TOOLS, window_for(small, TOOLS, slack=5), core_tools=CORE, compact_system="c")
    assert fitted.tools == TOOLS and fitted.messages[0] == ms[0]
    assert fitted.messages[1].role == "user" and fitted.messages[-1].content == "latest"
    assert "dropped" in fitted.steps[0]


def test_then_the_core_tools_then_the_compact_system_prompt():
    ms = convo(0)
    fitted = fit(ms, TOOLS, window_for(ms, CORE), core_tools=CORE, compact_system="compact")
    assert fitted.tools == CORE and fitted.messages[0].content == ms[0].content
    tiny = [Message.system("compact"), ms[-1]]
    fitted = fit(ms, TOOLS, window_for(tiny, CORE), core_tools=CORE, compact_system="compact")
    assert fitted.tools == CORE and fitted.messages[0].content == "compact"
    assert [s.split(" ")[0] for s in fitted.steps] == ["offered", "used"]


def test_too_small_fails_before_sending_naming_window_size_and_setting():
    with pytest.raises(ModelContextTooSmall) as info:
        fit(
            convo(1),
            TOOLS,
            Window(200, "reported by the server: /props n_ctx"),
            core_tools=CORE,
            compact_system="compact",
        )
    text = str(info.value)
    assert "window of 200 tokens (reported by the server: /props n_ctx)" in text
    assert "bytes" in text and "model.context_window" in text


def test_drop_exchanges_is_reusable_with_any_measure():
    ms = convo(4)
    kept = drop_exchanges(ms, lambda m: 1, lambda total: total <= 4)
    assert kept[0].role == "system" and len(kept) == 4 and kept[-1].content == "latest"
    assert drop_exchanges(ms, lambda m: 1, lambda total: total <= 1) == [ms[0], ms[-1]]
    assert drop_exchanges(ms, lambda m: 1, lambda total: True) == ms


def test_the_summed_wire_sizes_are_the_request_size():
    """fit() sums each message's wire_size instead of serialising every candidate whole."""
    ms = convo(3)
    call = ToolCall(id="c1", name="read", arguments={"path": "a.py"})
    ms[2:2] = [Message.assistant(None, [call]), Message.tool("c1", "ünïcode", name="read")]
    assert 1 + sum(wire_size(m) for m in ms) == request_size(ms, [])


def test_a_long_session_is_measured_only_as_far_back_as_the_window_reaches():
    """At turn 100 of a session in a small window, the trim measures the kept exchanges
    (and the one that did not fit), not every message of the session; it keeps what
    measuring each candidate whole would."""
    ms = convo(100)
    window = window_for(convo(5), TOOLS)
    measured: list[Message] = []

    def cost(m: Message) -> int:
        measured.append(m)
        return wire_size(m)

    tools = request_size([], TOOLS) - 2
    kept = drop_exchanges(
        ms, cost, lambda total: window.tokens_for(1 + total + tools) <= window.input_tokens
    )
    assert 4 < len(kept) < 20 and kept[-1].content == "latest"
    assert len(measured) <= len(kept) + 2
    starts = [i for i, m in enumerate(ms) if m.role == "user"]
    whole = next(
        [ms[0], *ms[i:]]
        for i in starts
        if window.estimate([ms[0], *ms[i:]], TOOLS) <= window.input_tokens
    )
    assert kept == whole == fit(ms, TOOLS, window).messages


def test_a_fit_serialises_each_message_once_and_estimates_the_whole_request(monkeypatch):
    """Every step's estimate (trim, core tools, compact prompt) is the whole request's, and
    no message or tool is serialised twice: the first token waits for the fit."""
    from ndomo.llm import budget, wire

    ms = convo(4)
    dumped: list[object] = []
    real = budget.json_size
    monkeypatch.setattr(budget, "_measured", {})  # nothing measured by an earlier test
    monkeypatch.setattr(wire, "_tools_json", {})
    real_dumps = wire._dumps

    def dumping(value: object) -> str:
        dumped.append(value)
        return real_dumps(value)

    monkeypatch.setattr(wire, "_dumps", dumping)

    def counting(value: object) -> int:
        dumped.append(value)
        return real(value)

    monkeypatch.setattr(budget, "json_size", counting)
    for window in (
        Window(100_000, "test"),
        window_for([ms[0], *ms[-3:]], TOOLS, slack=5),
        window_for(convo(0), CORE),
    ):
        dumped.clear()
        fitted = fit(ms, TOOLS, window, core_tools=CORE, compact_system="compact")
        monkeypatch.setattr(budget, "json_size", real)
        assert fitted.estimated == window.estimate(fitted.messages, fitted.tools)
        monkeypatch.setattr(budget, "json_size", counting)
        messages = [d for d in dumped if isinstance(d, dict) and "role" in d]
        assert len(messages) <= len(ms) + 1  # each message once (+ a compact system prompt)
        tools = [d["function"]["name"] for d in dumped if isinstance(d, dict) and "type" in d]
        assert len(tools) == len(set(tools)) <= len(TOOLS)  # each tool once, core ones too
        assert [d for d in dumped if not isinstance(d, dict)] == []


def test_model_stream_setting_takes_auto_and_booleans():
    assert ModelConfig().stream == "auto"
    assert ModelConfig(stream=False).stream is False and ModelConfig(stream=True).stream is True
    with pytest.raises(ValueError):
        ModelConfig(stream="sometimes")
    with pytest.raises(ValueError):
        ModelConfig(context_window=10)


def _measuring(monkeypatch) -> list[str | None]:
    """The contents `wire_size` serialises from now on (its cache emptied first)."""
    from ndomo.llm import budget

    monkeypatch.setattr(budget, "_measured", {})
    seen: list[str | None] = []
    real = budget._measure
    monkeypatch.setattr(budget, "_measure", lambda m: seen.append(m.content) or real(m))
    return seen


def test_a_message_read_again_next_turn_is_not_serialised_again(monkeypatch):
    """Each turn reads its history anew: equal messages (new objects) keep their size, and
    any difference the wire format shows is measured."""
    seen = _measuring(monkeypatch)
    call = ToolCall(id="c1", name="read", arguments={"path": "a.py"})

    def history() -> list[Message]:
        return [
            Message.system("S"),
            Message.user("ünïcode"),
            Message.assistant(None, [call]),
            Message.tool("c1", "out", name="read"),
        ]

    first = [wire_size(m) for m in history()]
    assert len(seen) == 4
    seen.clear()
    assert [wire_size(m) for m in history()] == first and seen == []
    other = ToolCall(id="c1", name="read", arguments={"path": "b.py"})
    changed = [
        Message.user("ünïcode!"),
        Message.assistant(None, [other]),
        Message.tool("c2", "out", name="read"),
        Message(role="user", content="S"),  # the system's text, another role
        Message(role="user", content="ünïcode", name="someone"),
    ]
    for m in changed:  # its object and a separator: a one-item list less one bracket
        assert wire_size(m) == request_size([m], []) - 1
    assert seen == [m.content for m in changed]


def test_the_size_cache_is_bounded_in_entries_and_in_text(monkeypatch):
    from ndomo.llm import budget

    seen = _measuring(monkeypatch)
    long = Message.user("x" * (budget.MEASURED_TEXT + 1))
    wire_size(long)
    wire_size(long)
    assert len(seen) == 2 and budget._measured == {}  # measured each time, never kept
    for i in range(budget.MEASURED_MAX + 10):
        wire_size(Message.user(f"m{i}"))
    assert 0 < len(budget._measured) <= budget.MEASURED_MAX


def _dumping_tools(monkeypatch) -> list[str]:
    """The names of the tools `wire` serialises from now on (its cache emptied first)."""
    from ndomo.llm import wire

    monkeypatch.setattr(wire, "_tools_json", {})
    seen: list[str] = []
    real = wire._dumps

    def dumping(value: object) -> str:
        if isinstance(value, dict) and "function" in value:
            seen.append(value["function"]["name"])
        return real(value)

    monkeypatch.setattr(wire, "_dumps", dumping)
    return seen


def test_a_tool_list_offered_again_is_not_serialised_again(monkeypatch):
    """An agent's tools are offered as the same specs every turn: their sizes are kept
    across fits (the full list and its core subset alike), equal to the list's JSON, and a
    tool whose name, description or schema differs is measured."""
    from ndomo.llm import budget

    seen = _dumping_tools(monkeypatch)
    schema = {"type": "object", "properties": {"path": {"type": "string"}}}
    offered = [ToolSpec(name=f"t{i}", description="ü" * i, parameters=schema) for i in range(4)]
    assert budget.tools_wire_size(offered) == request_size([], offered) - 2  # less "[]"
    assert sorted(seen) == ["t0", "t1", "t2", "t3"]
    seen.clear()
    # the next turn's lists: the same specs (`tool_specs` keeps them), all and the core ones
    again, core = list(offered), offered[:2]
    assert budget.tools_wire_size(again) == request_size([], again) - 2
    assert budget.tools_wire_size(core) == request_size([], core) - 2
    assert seen == []  # nothing serialised again
    changed = [
        ToolSpec(name="t0", description="other", parameters=schema),
        ToolSpec(name="t9", description="", parameters=schema),
        ToolSpec(name="t1", description="ü", parameters={**schema, "required": ["path"]}),
    ]
    for t in changed:
        assert budget.tools_wire_size([t]) == request_size([], [t]) - 2
    assert seen == ["t0", "t9", "t1"]
    assert budget.tools_wire_size([]) == 0


def test_the_tools_json_cache_is_bounded(monkeypatch):
    from ndomo.llm import wire

    monkeypatch.setattr(wire, "_tools_json", {})
    for i in range(wire.TOOLS_JSON_MAX + 10):
        wire.tool_json(wire.to_openai_tools([ToolSpec(name=f"t{i}")])[0])
    assert 0 < len(wire._tools_json) <= wire.TOOLS_JSON_MAX


def test_the_chat_body_is_the_params_json_with_each_tool_written_once(monkeypatch):
    """The request's body is `params` as compact JSON (the same object, the same size);
    its tools are written from their kept JSON, so a second request serialises none."""
    import json

    from ndomo.llm import wire

    seen = _dumping_tools(monkeypatch)
    schema = {"type": "object", "properties": {"q": {"type": "string", "description": "ü"}}}
    tools = wire.to_openai_tools(
        [ToolSpec(name="grep", description="Search «text»", parameters=schema), *TOOLS[:2]]
    )
    msgs = [{"role": "user", "content": "héllo"}]
    cases = [
        {"model": "m", "messages": msgs, "stream": True, "tools": tools, "tool_choice": "auto"},
        {"tools": tools},
        {"model": "m", "messages": msgs},
        {"model": "m", "messages": msgs, "tools": []},
    ]
    for params in cases:
        body = wire.chat_body(params)
        assert json.loads(body) == params
        as_sent = json.dumps(params, ensure_ascii=False, separators=(",", ":")).encode()
        assert len(body) == len(as_sent)
    assert seen == ["grep", "t0", "t1"]  # once, for the first body that carried them
