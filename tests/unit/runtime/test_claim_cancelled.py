"""A turn's caller cancelled while the session's claim is being written (the claim made on
the store's thread, its answer not back yet) lets that claim go: the session is not left
busy for the rest of the process (every later turn refused as "already running")."""

from __future__ import annotations

import asyncio

import pytest

from ndomo import compose
from ndomo.runtime.context import TurnRequest
from ndomo.runtime.runtime import Runtime


async def test_a_caller_cancelled_during_the_claim_leaves_the_session_free(app, fake, monkeypatch):
    rt = Runtime(app, compose.plugins())
    store = await app.store()
    session = (await rt.new_session()).id
    claim_session = store.claim_session
    claimed = asyncio.Event()

    async def slow_claim(*args, **kwargs):
        row = await claim_session(*args, **kwargs)  # in the database; its answer not back yet
        claimed.set()
        await asyncio.sleep(0.3)
        return row

    monkeypatch.setattr(store, "claim_session", slow_claim)
    turn = asyncio.ensure_future(rt.run(TurnRequest(prompt="hello there", session=session)))
    await claimed.wait()
    turn.cancel()  # the editor cancelled its request (an LSP $/cancelRequest, ACP's cancel)
    with pytest.raises(asyncio.CancelledError):
        await turn
    assert fake.chat_requests() == []
    assert await store.session_claim(session) is None

    monkeypatch.setattr(store, "claim_session", claim_session)
    fake.push({"text": "answered"})
    summary = await rt.run(TurnRequest(prompt="and now?", session=session))
    assert (summary.status, summary.answer) == ("done", "answered"), summary
