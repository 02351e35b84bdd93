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

    async def _all(self, sql: str, params: Iterable[Any] = ()) -> list[sqlite3.Row]:
        async with self._locked():
            async with self._conn.execute(sql, tuple(params)) as cur:
                return list(await cur.fetchall())

    async def _one(self, sql: str, params: Iterable[Any] = ()) -> sqlite3.Row | None:
        async with self._locked():
            async with self._conn.execute(sql, tuple(params)) as cur:
                return await cur.fetchone()

    async def _exec(self, sql: str, params: Iterable[Any] = ()) -> int:
        """Run one statement inside the caller's transaction; returns rowcount."""
        async with self._conn.execute(sql, tuple(params)) as cur:
            return cur.rowcount

    async def _insert(self, sql: str, params: Iterable[Any] = ()) -> int:
        async with self._conn.execute(sql, tuple(params)) as cur:
            return int(cur.lastrowid or 0)
