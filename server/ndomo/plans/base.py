"""Shared plumbing for the store's parts: one connection, one lock, row decoding.

One aiosqlite connection per process-side store; an asyncio lock serialises its use so
a coroutine never reads another's half-done transaction. The lock is re-entrant per
task and a nested `_tx` joins the open transaction, so operations can compose.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator, Iterable

import aiosqlite
from pydantic import BaseModel, ValidationError

from ndomo.plans.db import write_tx
from ndomo.plans.errors import Invalid, WriteOnceViolation


def loads(value: Any, default: Any) -> Any:
    if value is None or value == "":
        return default
    try:
        return json.loads(value)
    except (TypeError, ValueError):
        return default


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def validate(model: type[BaseModel], data: Any, where: str = "") -> Any:
    """Accept a model or a dict; bad input becomes Invalid naming the field."""
    if isinstance(data, model):
        return data
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        parts = [f"{where}{'.'.join(str(x) for x in e['loc']) or '(value)'}: {e['msg']}" for e in exc.errors()]
        first = exc.errors()[0]["loc"] if exc.errors() else ()
        raise Invalid("invalid " + "; ".join(parts), field=".".join(str(x) for x in first) or None) from None


class StoreBase:
    _conn: aiosqlite.Connection
    workspace: Path
    db_path: Path

    def _init_base(self, conn: aiosqlite.Connection, db_path: Path, workspace: Path) -> None:
        self._conn = conn
        self.db_path = db_path
        self.workspace = workspace
        self._lock = asyncio.Lock()
        self._owner: asyncio.Task | None = None

    @asynccontextmanager
    async def _locked(self) -> AsyncIterator[None]:
        me = asyncio.current_task()
        if me is not None and self._owner is me:
            yield
            return
        async with self._lock:
            self._owner = me
            try:
                yield
            finally:
                self._owner = None

    @asynccontextmanager
    async def _tx(self) -> AsyncIterator[aiosqlite.Connection]:
        async with self._locked():
            if self._conn.in_transaction:
                yield self._conn
                return
            try:
                async with write_tx(self._conn) as conn:
                    yield conn
            except sqlite3.IntegrityError as exc:
                if "write-once" in str(exc):
                    raise WriteOnceViolation(str(exc)) from exc
                raise

    # Reads are one `execute_fetchall`: one hop to aiosqlite's thread instead of three
    # (execute, fetch, close), which is most of a small query's cost.
    async def _all(self, sql: str, params: Iterable[Any] = ()) -> list[sqlite3.Row]:
        async with self._locked():
            return list(await self._conn.execute_fetchall(sql, tuple(params)))

    async def _one(self, sql: str, params: Iterable[Any] = ()) -> sqlite3.Row | None:
        """The first row; callers' queries return one row (by key, LIMIT 1 or an aggregate)."""
        async with self._locked():
            rows = await self._conn.execute_fetchall(sql, tuple(params))
        return rows[0] if rows else None

    async def _reads(self, *queries: tuple[str, Iterable[Any]]) -> list[list[sqlite3.Row]]:
        """Several reads in one hop to aiosqlite's thread, as one consistent snapshot.

        Uses aiosqlite's `_execute` (queue a callable on its thread): the public API has
        no "run these statements together", and each hop costs ~0.1 ms.
        """

        def run(conn: sqlite3.Connection) -> list[list[sqlite3.Row]]:
            own_tx = not conn.in_transaction
            if own_tx:  # one read transaction: no writer commits between the statements
                conn.execute("BEGIN")
            try:
                return [conn.execute(sql, tuple(params)).fetchall() for sql, params in queries]
            finally:
                if own_tx:
                    conn.execute("COMMIT")

        hop = getattr(self._conn, "_execute", None)
        raw = getattr(self._conn, "_conn", None)
        async with self._locked():
            if hop is None or raw is None:  # another aiosqlite: the public, slower path
                return [list(await self._conn.execute_fetchall(sql, tuple(p))) for sql, p in queries]
            return await hop(run, raw)

    async def _exec(self, sql: str, params: Iterable[Any] = ()) -> int:
        """Run one statement inside the caller's transaction; returns rowcount."""
        async with self._conn.execute(sql, tuple(params)) as cur:
            return cur.rowcount

    async def _insert(self, sql: str, params: Iterable[Any] = ()) -> int:
        async with self._conn.execute(sql, tuple(params)) as cur:
            return int(cur.lastrowid or 0)
