"""Shared plumbing for the store's parts: one connection, one lock, row decoding.

One aiosqlite connection per process-side store; an asyncio lock serialises its use so
a coroutine never reads another's half-done transaction. The lock is re-entrant per
task and a nested `_tx` joins the open transaction, so operations can compose.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite
from pydantic import BaseModel, ValidationError
from pydantic_core import from_json

from ndomo.plans.db import BEGIN_ATTEMPTS, begin_backoff, write_tx
from ndomo.plans.errors import Invalid, WriteOnceViolation
from ndomo.plans.program import BeginBusy, Program, run_program, run_write

T = TypeVar("T")


def loads(value: Any, default: Any) -> Any:
    """A stored JSON column; missing or unreadable gives `default`.

    pydantic-core's parser: ~10× faster than `json.loads` on the small documents stored
    here, and every row decoded pays it up to three times.
    """
    if value is None or value == "":
        return default
    try:
        return from_json(value)
    except (TypeError, ValueError):
        return default


def row_dict(row: sqlite3.Row) -> dict[str, Any]:
    """A row as a dict; `dict(zip(...))` is ~2.5× faster than `dict(row)`."""
    return dict(zip(row.keys(), row, strict=True))


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def validate(model: type[BaseModel], data: Any, where: str = "") -> Any:
    """Accept a model or a dict; bad input becomes Invalid naming the field."""
    if isinstance(data, model):
        return data
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        parts = [
            f"{where}{'.'.join(str(x) for x in e['loc']) or '(value)'}: {e['msg']}"
            for e in exc.errors()
        ]
        first = exc.errors()[0]["loc"] if exc.errors() else ()
        raise Invalid(
            "invalid " + "; ".join(parts), field=".".join(str(x) for x in first) or None
        ) from None


@contextmanager
def _write_once_errors() -> Iterator[None]:
    """The write-once triggers abort with a message naming the rule: a typed error."""
    try:
        yield
    except sqlite3.IntegrityError as exc:
        if "write-once" in str(exc):
            raise WriteOnceViolation(str(exc)) from exc
        raise


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
        # Called (synchronously, on the event loop) after each write transaction this store
        # commits: what shows the store's data (plan diagnostics) wakes without polling.
        self.commit_listeners: list[Callable[[], None]] = []

    def _committed(self) -> None:
        for listener in list(self.commit_listeners):
            try:
                listener()
            except Exception:  # a listener must never fail a committed write
                logging.getLogger("ndomo.plans").exception("commit listener failed")

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
            with _write_once_errors():
                async with write_tx(self._conn) as conn:
                    yield conn
            self._committed()

    def _hop(self) -> tuple[Callable[..., Awaitable[Any]], sqlite3.Connection] | None:
        """aiosqlite's private "run this callable on your thread" and its sqlite3 connection.

        The public API has no "run these statements together"; None on an aiosqlite
        without them, and callers then take the public, slower path.
        """
        hop = getattr(self._conn, "_execute", None)
        raw = getattr(self._conn, "_conn", None)
        return None if hop is None or raw is None else (hop, raw)

    async def _run(self, program: Program[T]) -> T:
        """Run a statement program in the caller's transaction (or autocommit), one hop."""
        async with self._locked():
            fast = self._hop()
            if fast is not None:
                hop, raw = fast
                return await hop(run_program, raw, program)
            try:  # the public path: one hop per statement
                step = next(program)
                while True:
                    step = program.send(list(await self._conn.execute_fetchall(*step)))
            except StopIteration as done:
                return done.value

    async def _write(self, make: Callable[[], Program[T]]) -> T:
        """Run `make()` as one write transaction, joining the caller's if one is open.

        Same semantics as `_tx` (BEGIN IMMEDIATE retried while busy, rollback on any
        error, write-once errors mapped), but BEGIN, the statements and COMMIT are one
        hop. If the caller is cancelled meanwhile, the transaction still completes
        (as one in flight at COMMIT would).
        """
        async with self._locked():
            fast = self._hop()
            if self._conn.in_transaction or fast is None:
                async with self._tx():
                    return await self._run(make())
            hop, raw = fast
            with _write_once_errors():
                for attempt in range(BEGIN_ATTEMPTS):
                    try:
                        result = await hop(run_write, raw, make)
                        self._committed()
                        return result
                    except BeginBusy as exc:
                        if attempt == BEGIN_ATTEMPTS - 1:
                            raise exc.__cause__ or exc from None
                    await asyncio.sleep(begin_backoff(attempt))
            raise AssertionError("unreachable")

    # Reads are one `execute_fetchall`: one hop to aiosqlite's thread instead of three
    # (execute, fetch, close), which is most of a small query's cost.
    async def _all(self, sql: str, params: Iterable[Any] = ()) -> list[sqlite3.Row]:
        async with self._locked():
            return list(await self._conn.execute_fetchall(sql, tuple(params)))

    async def _one(self, sql: str, params: Iterable[Any] = ()) -> sqlite3.Row | None:
        """The first row; callers' queries return one row (by key, LIMIT 1 or an aggregate)."""
        async with self._locked():
            rows = await self._conn.execute_fetchall(sql, tuple(params))
        return next(iter(rows), None)

    async def _reads(self, *queries: tuple[str, Iterable[Any]]) -> list[list[sqlite3.Row]]:
        """Several reads in one hop to aiosqlite's thread, as one consistent snapshot."""

        def run(conn: sqlite3.Connection) -> list[list[sqlite3.Row]]:
            own_tx = not conn.in_transaction
            if own_tx:  # one read transaction: no writer commits between the statements
                conn.execute("BEGIN")
            try:
                return [conn.execute(sql, tuple(params)).fetchall() for sql, params in queries]
            finally:
                if own_tx:
                    conn.execute("COMMIT")

        async with self._locked():
            fast = self._hop()
            if fast is None:  # another aiosqlite: the public, slower path
                return [
                    list(await self._conn.execute_fetchall(sql, tuple(p))) for sql, p in queries
                ]
            hop, raw = fast
            return await hop(run, raw)

    async def _exec(self, sql: str, params: Iterable[Any] = ()) -> int:
        """Run one statement inside the caller's transaction; returns rowcount."""
        async with self._conn.execute(sql, tuple(params)) as cur:
            return cur.rowcount

    async def _insert(self, sql: str, params: Iterable[Any] = ()) -> int:
        async with self._conn.execute(sql, tuple(params)) as cur:
            return int(cur.lastrowid or 0)
