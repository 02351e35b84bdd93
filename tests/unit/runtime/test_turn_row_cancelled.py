"""A turn cancelled while its row is being written (the insert done on the store's thread,
its answer not back yet) ends that row as cancelled instead of leaving it running."""

from __future__ import annotations

import asyncio

from ndomo import compose
from ndomo.runtime.context import TurnRequest
from ndomo.runtime.runtime import Runtime


async def test_a_turn_cancelled_while_its_row_is_written_ends_it(app, fake, monkeypatch):
    rt = Runtime(app, compose.plugins())
    store = await app.store()
    session = (await rt.new_session()).id
    start_turn = store.start_turn
    writing = asyncio.Event()

    async def slow_start(*args, **kwargs):
        turn = await start_turn(*args, **kwargs)  # in the database; its answer not back yet
        writing.set()
        await asyncio.sleep(0.3)
        return turn

    monkeypatch.setattr(store, "start_turn", slow_start)
    fake.push({"text": "never asked"})
    turn = asyncio.ensure_future(rt.run(TurnRequest(prompt="hello there", session=session)))
    await writing.wait()
    assert rt.cancel(session)
    summary = await turn
    assert summary.status == "cancelled"
    assert fake.chat_requests() == []
    (row,) = await store.list_turns(session)
    assert (row.id, row.status) == (summary.turn_id, "cancelled")
