"""Bookkeeping the first token need not wait for (the turn's user message in the store)
runs behind the model's first event, not beside the request; with a model slow to begin,
it still runs within `QUIET_S`."""

from __future__ import annotations

import asyncio

from ndomo import compose
from ndomo.runtime import context
from ndomo.runtime.context import TurnRequest
from ndomo.runtime.runtime import Runtime


async def _stored_while_waiting(app, fake) -> list[str]:
    """The roles stored for the session while the model holds its answer back."""
    rt = Runtime(app, compose.plugins())
    session = (await rt.new_session()).id
    fake.push({"delay": 1.5, "text": "late but fine"})
    turn = asyncio.ensure_future(rt.run(TurnRequest(prompt="hello there", session=session)))
    while not fake.chat_requests():
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.5)  # the model is still thinking
    stored = await (await app.store()).session_messages(session)
    summary = await turn
    assert summary.status == "done"
    after = await (await app.store()).session_messages(session)
    assert [(m.role, m.content) for m in after] == [
        ("user", "hello there"),
        ("assistant", "late but fine"),
    ]
    return [m.role for m in stored]


async def test_the_user_message_waits_for_the_first_event(app, fake, monkeypatch):
    monkeypatch.setattr(context, "QUIET_S", 30.0)  # no cap within the test: only the event
    assert await _stored_while_waiting(app, fake) == []


async def test_a_model_slow_to_begin_does_not_hold_the_user_message_back(app, fake):
    assert context.QUIET_S <= 0.1
    assert await _stored_while_waiting(app, fake) == ["user"]
