"""Closing the store is exception-safe: whatever goes wrong closing the change watcher, the
main connection closes, and no aiosqlite worker thread can keep the process alive."""

from __future__ import annotations

import asyncio

import pytest

from ndomo.app import App
from ndomo.plans.store import PlanStore


async def test_close_closes_the_connection_when_the_watcher_close_is_cancelled(tmp_path):
    store = await PlanStore.open(tmp_path / ".ndomo" / "ndomo.db", workspace=tmp_path)
    await store.data_version()  # opens the watcher connection
    main_thread = store._conn._thread

    async def cancelled() -> None:
        raise asyncio.CancelledError

    watch = store._watch
    real_close = watch.close
    watch.close = cancelled
    try:
        with pytest.raises(asyncio.CancelledError):
            await store.close()
        main_thread.join(10)
        assert not main_thread.is_alive()
    finally:
        await real_close()


async def test_connection_threads_never_hold_the_process(tmp_path):
    store = await PlanStore.open(tmp_path / ".ndomo" / "ndomo.db", workspace=tmp_path)
    try:
        await store.data_version()
        assert store._conn._thread.daemon and store._watch._thread.daemon
    finally:
        await store.close()


async def test_app_closes_the_store_when_a_service_fails(tmp_path):
    app = App(tmp_path)
    store = await app.store()

    class Broken:
        async def aclose(self) -> None:
            raise RuntimeError("boom")

    app.close_with(Broken())
    await app.aclose()
    store._conn._thread.join(10)
    assert not store._conn._thread.is_alive()
