"""The turn's row is stored beside the build, not before it: the build's prompts, reads and
fit overlap the write, and what needs the turn's id waits for it — the model request, every
event (`turn_started` stays first), the stored messages and the turn's end."""

from __future__ import annotations

import asyncio

from ndomo import compose
from ndomo.runtime import builder
from ndomo.runtime.context import TurnRequest
from ndomo.runtime.runtime import Runtime
from ndomo.store.errors import StoreError


async def test_the_build_runs_while_the_turn_row_is_written(app, fake, monkeypatch):
    rt = Runtime(app, compose.plugins())
    store = await app.store()
    session = (await rt.new_session()).id
    order: list[str] = []
    start_turn, build_turn = store.start_turn, builder.build_turn

    async def slow_start(*args, **kwargs):
        order.append("row: start")
        await asyncio.sleep(0.3)  # a store busy with another editor's write
        turn = await start_turn(*args, **kwargs)
        order.append(f"row: stored, requests {len(fake.chat_requests())}")
        return turn

    async def build(ctx):
        order.append("build: start")
        await build_turn(ctx)
        order.append("build: done")

    monkeypatch.setattr(store, "start_turn", slow_start)
    monkeypatch.setattr(builder, "build_turn", build)
    events: list[tuple[str, int | None]] = []

    async def seen(ctx, event):
        events.append((event.kind, event.turn_id))

    rt.event_listeners.add(seen)
    fake.push({"text": "hello back"})
    summary = await rt.run(TurnRequest(prompt="hello there", session=session))

    assert summary.status == "done" and summary.turn_id is not None
    # The build ran to its end while the row was still being written; no request went
    # out before the row was stored.
    assert order == ["row: start", "build: start", "build: done", "row: stored, requests 0"]
    assert events[0] == ("turn_started", summary.turn_id)
    assert {turn_id for _, turn_id in events} == {summary.turn_id}
    stored = await store.session_messages(session)
    assert [(m.role, m.turn_id) for m in stored] == [
        ("user", summary.turn_id),
        ("assistant", summary.turn_id),
    ]
    (turn,) = await store.list_turns(session)
    assert (turn.id, turn.status) == (summary.turn_id, "done")


async def test_a_turn_row_that_cannot_be_stored_fails_the_turn_before_its_request(
    app, fake, monkeypatch
):
    rt = Runtime(app, compose.plugins())
    store = await app.store()
    session = (await rt.new_session()).id

    async def broken(*args, **kwargs):
        raise StoreError("the database is locked")

    monkeypatch.setattr(store, "start_turn", broken)
    fake.push({"text": "never asked"})
    summary = await rt.run(TurnRequest(prompt="hello there", session=session))
    assert summary.status == "failed" and "the database is locked" in (summary.error or "")
    assert fake.chat_requests() == []


async def test_a_turn_cancelled_while_its_row_is_written_still_records_and_ends_it(
    app, fake, monkeypatch
):
    rt = Runtime(app, compose.plugins())
    store = await app.store()
    session = (await rt.new_session()).id
    start_turn = store.start_turn
    writing = asyncio.Event()

    async def slow_start(*args, **kwargs):
        writing.set()
        await asyncio.sleep(0.3)
        return await start_turn(*args, **kwargs)

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
