"""LspHost merges text deltas into fewer `ndomo/turn/event` notifications, in order."""

from __future__ import annotations

import asyncio

from ndomo.lsp import host as host_mod
from ndomo.lsp.host import LspHost
from ndomo.runtime.events import TextDelta, ToolStarted, TurnFinished


class _Protocol:
    def __init__(self) -> None:
        self.sent: list[tuple[str, dict]] = []

    def notify(self, method: str, params: dict) -> None:
        self.sent.append((method, params))


class _Server:
    def __init__(self) -> None:
        self.protocol = _Protocol()


def _host() -> tuple[LspHost, list]:
    server = _Server()
    return LspHost(server), server.protocol.sent


async def test_deltas_merge_and_precede_the_next_event():
    h, sent = _host()
    for word in ("a", "b", "c"):
        await h.emit(TextDelta(text=word, turn_id=1))
    assert [p["text"] for _, p in sent] == ["a"]  # the first at once; the rest buffered
    await h.emit(ToolStarted(call_id="x", name="read", arguments={}, turn_id=1))
    await h.emit(TextDelta(text="d", turn_id=1))
    await h.emit(TurnFinished(status="done", turn_id=1))
    kinds = [(p["kind"], p.get("text")) for _, p in sent]
    assert kinds == [
        ("text", "a"),
        ("text", "bc"),
        ("tool_started", None),
        ("text", "d"),
        ("turn_finished", None),
    ]
    assert all(m == "ndomo/turn/event" for m, _ in sent)
    assert sent[0][1]["turn_id"] == 1
    assert h.events == []  # nothing kept on a long-lived server


async def test_timer_flushes_a_pause_in_the_stream(monkeypatch):
    monkeypatch.setattr(host_mod, "TEXT_FLUSH_S", 0.01)
    h, sent = _host()
    await h.emit(TextDelta(text="hel", turn_id=2))
    await h.emit(TextDelta(text="l", turn_id=2))
    await h.emit(TextDelta(text="o", turn_id=2))
    for _ in range(100):
        if len(sent) == 2:
            break
        await asyncio.sleep(0.01)
    assert [p["text"] for _, p in sent] == ["hel", "lo"]
    for _ in range(100):  # the window that gathered nothing ends: the next delta goes at once
        if h._flush_handle is None:
            break
        await asyncio.sleep(0.01)
    await h.emit(TextDelta(text="!", turn_id=2))
    assert [p["text"] for _, p in sent] == ["hel", "lo", "!"]


async def test_first_delta_of_a_turn_is_sent_at_once():
    h, sent = _host()
    await h.emit(TextDelta(text="first", turn_id=3))
    assert [p["text"] for _, p in sent] == ["first"]  # no timer in between
    h.flush_text()


async def test_deltas_of_different_turns_are_not_merged():
    h, sent = _host()
    await h.emit(TextDelta(text="parent", turn_id=1))
    await h.emit(TextDelta(text="child", turn_id=2))
    h.flush_text()
    assert [(p["turn_id"], p["text"]) for _, p in sent] == [(1, "parent"), (2, "child")]
