"""Closing the store is exception-safe: a cancelled close still closes the connection and
ends the store's thread, and an App whose other service fails to close still closes it."""

from __future__ import annotations

import asyncio
import sqlite3
import threading

import pytest

from ndomo.app import App
from ndomo.store.store import PlanStore


async def _thread(store: PlanStore) -> threading.Thread:
    return await store._db.call(lambda _c: threading.current_thread())


async def test_a_cancelled_close_still_closes_the_connection_and_ends_the_thread(tmp_path):
    store = await PlanStore.open(tmp_path / ".ndomo" / "ndomo.db", workspace=tmp_path)
    thread = await _thread(store)
    closing = asyncio.ensure_future(store.close())
    await asyncio.sleep(0)  # the close is on its way to the store's thread
    closing.cancel()
    with pytest.raises(asyncio.CancelledError):
        await closing
    thread.join(10)
    assert not thread.is_alive()
    with pytest.raises(sqlite3.ProgrammingError, match="closed"):
        await store.list_plans()
    await store.close()  # closing twice is fine


async def test_app_closes_the_store_when_a_service_fails(tmp_path):
    app = App(tmp_path)
    store = await app.store()
    thread = await _thread(store)

    class Broken:
        async def aclose(self) -> None:
            raise RuntimeError("boom")

    app.close_with(Broken())
    await app.aclose()
    thread.join(10)
    assert not thread.is_alive()
