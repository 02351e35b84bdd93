"""The store's one way to run statements: a plain `sqlite3` connection on a thread of its own.

Every store call is one synchronous function `fn(conn, *args)` sent to that thread in one
hop (`loop.run_in_executor` on a one-worker `ThreadPoolExecutor`): the event loop never
blocks, statements of one call never interleave with another call's (the thread runs one
function at a time), and no coroutine can leave a transaction half done.

Several processes (editors, the CLI) share one file, so every write is a
`BEGIN IMMEDIATE` transaction: the write lock is taken up front, `busy_timeout` waits for
it, and a still-busy BEGIN is retried with back-off on the event loop (the thread is not
held while waiting).
"""

from __future__ import annotations

import asyncio
import random
import sqlite3
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Concatenate, ParamSpec, TypeVar

BUSY_TIMEOUT_MS = 5000
BEGIN_ATTEMPTS = 8
# Every connection's settings besides WAL (set once per file): benchmarks' raw sqlite3
# twins use the same, so a comparison is never NORMAL against FULL.
PRAGMAS = (f"busy_timeout = {BUSY_TIMEOUT_MS}", "foreign_keys = ON", "synchronous = NORMAL")

T = TypeVar("T")
P = ParamSpec("P")
Fn = Callable[Concatenate[sqlite3.Connection, P], T]


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def is_busy(exc: BaseException) -> bool:
    if not isinstance(exc, sqlite3.OperationalError):
        return False
    msg = str(exc).lower()
    return "locked" in msg or "busy" in msg


def begin_backoff(attempt: int) -> float:
    """Seconds to wait before retrying a busy BEGIN IMMEDIATE (jittered, doubling, ≤ 1 s)."""
    return min(1.0, 0.02 * 2**attempt) * (0.5 + random.random())


class BeginBusy(Exception):
    """BEGIN IMMEDIATE found the database locked after busy_timeout: the caller retries."""


def connect(path: Path) -> sqlite3.Connection:
    """Open a connection in autocommit mode (transactions are always explicit), in WAL."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
    conn.row_factory = sqlite3.Row
    try:
        for pragma in PRAGMAS[:2]:
            conn.execute(f"PRAGMA {pragma}")
        for attempt in range(BEGIN_ATTEMPTS):
            try:
                conn.execute("PRAGMA journal_mode = WAL")
                break
            except sqlite3.OperationalError as exc:
                if not is_busy(exc) or attempt == BEGIN_ATTEMPTS - 1:
                    raise
                time.sleep(0.05 * (attempt + 1))  # on the store's thread, at open only
        for pragma in PRAGMAS[2:]:
            conn.execute(f"PRAGMA {pragma}")
    except BaseException:
        conn.close()
        raise
    return conn


def snapshot(conn: sqlite3.Connection, fn: Fn[P, T], *args: P.args, **kw: P.kwargs) -> T:
    """`fn` in one read transaction: no other writer's commit lands between its statements."""
    if conn.in_transaction:
        return fn(conn, *args, **kw)
    conn.execute("BEGIN")
    try:
        return fn(conn, *args, **kw)
    finally:
        conn.execute("COMMIT")


def transaction(conn: sqlite3.Connection, fn: Fn[P, T], *args: P.args, **kw: P.kwargs) -> T:
    """BEGIN IMMEDIATE, `fn`, COMMIT; rolled back on any error.

    A busy BEGIN raises BeginBusy (nothing was done), so the event-loop side can wait
    without holding the thread and try again.
    """
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:
        if is_busy(exc):
            raise BeginBusy(str(exc)) from exc
        raise
    try:
        result = fn(conn, *args, **kw)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return result


class Db:
    """One sqlite3 connection and the one thread that uses it."""

    def __init__(self, pool: ThreadPoolExecutor, conn: sqlite3.Connection) -> None:
        self._pool: ThreadPoolExecutor | None = pool
        self._conn = conn

    @classmethod
    async def open(cls, path: Path) -> Db:
        # A pool worker is not a daemon, but an idle one ends at interpreter exit: a store
        # left open cannot keep the process alive (only a statement still running can).
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ndomo-store")
        try:
            conn = await asyncio.get_running_loop().run_in_executor(pool, connect, Path(path))
        except BaseException:
            pool.shutdown(wait=False)
            raise
        return cls(pool, conn)

    async def call(self, fn: Fn[P, T], *args: P.args, **kw: P.kwargs) -> T:
        """Run `fn(conn, *args)` on the store's thread: one hop, as is (autocommit)."""
        if self._pool is None:
            raise sqlite3.ProgrammingError("the plan store is closed")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, lambda: fn(self._conn, *args, **kw))

    async def read(self, fn: Fn[P, T], *args: P.args, **kw: P.kwargs) -> T:
        """`fn` in one read transaction, one hop."""
        return await self.call(snapshot, fn, *args, **kw)

    async def write(self, fn: Fn[P, T], *args: P.args, **kw: P.kwargs) -> T:
        """`fn` as one write transaction (BEGIN IMMEDIATE, retried while busy), one hop
        per attempt. If the caller is cancelled meanwhile, the transaction still completes
        or rolls back as a whole on the thread."""
        for attempt in range(BEGIN_ATTEMPTS):
            try:
                return await self.call(transaction, fn, *args, **kw)
            except BeginBusy as exc:
                if attempt == BEGIN_ATTEMPTS - 1:
                    raise exc.__cause__ or exc from None
            await asyncio.sleep(begin_backoff(attempt))
        raise AssertionError("unreachable")

    async def close(self) -> None:
        """Close the connection on its thread, then let the thread end. Safe to repeat."""
        if self._pool is None:
            return
        pool, self._pool = self._pool, None  # closed: no more calls
        try:
            await asyncio.get_running_loop().run_in_executor(pool, self._conn.close)
        finally:
            pool.shutdown(wait=False)

    @property
    def closed(self) -> bool:
        return self._pool is None


def split_sql(script: str) -> list[str]:
    """Split a script into statements, keeping trigger bodies (which contain ';') whole.

    `executescript` would COMMIT first, breaking one-transaction-per-migration.
    """
    out: list[str] = []
    buf = ""
    for piece in script.split(";"):
        buf += piece + ";"
        if sqlite3.complete_statement(buf):
            if buf.strip(" \n\t;"):
                out.append(buf.strip())
            buf = ""
    if buf.strip(" \n\t;"):
        out.append(buf.strip())
    return out
