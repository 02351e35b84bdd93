"""The store's one way to run statements: a plain `sqlite3` connection on a thread of its own.

Every store call is one synchronous function `fn(conn, *args)` sent to that thread in one
hop (a queue in, `call_soon_threadsafe` back): the event loop never blocks, statements of
one call never interleave with another call's (the thread runs one function at a time),
and no coroutine can leave a transaction half done. (`loop.run_in_executor` on a
one-worker pool would do the same with more machinery: measured 2× the hop, ~50 µs
against ~25 µs, and a small query costs about one hop.)

Several processes (editors, the CLI) share one file, so every write is a
`BEGIN IMMEDIATE` transaction: the write lock is taken up front, `busy_timeout` waits for
it, and a still-busy BEGIN is retried with back-off on the event loop (the thread is not
held while waiting).
"""

from __future__ import annotations

import asyncio
import logging
import queue
import random
import sqlite3
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Concatenate, ParamSpec, TypeVar

BUSY_TIMEOUT_MS = 5000
BEGIN_ATTEMPTS = 8
# Every connection's settings besides WAL (set once per file): benchmarks' raw sqlite3
# twins use the same, so a comparison is never NORMAL against FULL. The page cache holds
# up to CACHE_KIB (SQLite's default is 2 MiB): at 100k plans a search by text and file
# reads ~1 MB of one word's doclist and the ranking indexes (~3 MB each), which 2 MiB
# evicted between calls; it grows only with the pages read, so a small database is not
# affected.
CACHE_KIB = 16384
PRAGMAS = (
    f"busy_timeout = {BUSY_TIMEOUT_MS}",
    "foreign_keys = ON",
    "synchronous = NORMAL",
    f"cache_size = -{CACHE_KIB}",
)

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


Job = tuple[asyncio.Future, Callable[[], object]]


class Db:
    """One sqlite3 connection and the one thread that uses it.

    The thread is a daemon: a store left open (an editor's `exit` ending the loop first)
    cannot keep the process alive; SQLite's journal makes dying mid-write safe.
    """

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Job | None] = queue.SimpleQueue()
        self._conn: sqlite3.Connection | None = None
        self._closed = False
        self._thread = threading.Thread(target=self._serve, name="ndomo-store", daemon=True)

    @classmethod
    async def open(cls, path: Path) -> Db:
        db = cls()
        db._thread.start()
        try:
            db._conn = await db._submit(connect, Path(path))
        except BaseException:
            db._jobs.put(None)
            raise
        return db

    def _serve(self) -> None:
        while (job := self._jobs.get()) is not None:
            fut, fn = job
            try:
                result, error = fn(), None
            except BaseException as exc:  # noqa: BLE001 — handed to the awaiting caller
                result, error = None, exc
            try:
                fut.get_loop().call_soon_threadsafe(_settle, fut, result, error)
            except RuntimeError:  # the loop closed meanwhile: nobody is waiting any more
                logging.getLogger("ndomo.store").debug("store answer dropped: loop closed")

    def _submit(self, fn: Callable[P, T], *args: P.args, **kw: P.kwargs) -> asyncio.Future[T]:
        if self._closed:
            raise sqlite3.ProgrammingError("the plan store is closed")
        fut: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._jobs.put((fut, lambda: fn(*args, **kw)))
        return fut

    async def call(self, fn: Fn[P, T], *args: P.args, **kw: P.kwargs) -> T:
        """Run `fn(conn, *args)` on the store's thread: one hop, as is (autocommit)."""
        return await self._submit(lambda: fn(self._conn, *args, **kw))  # type: ignore[arg-type]  # set by open

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
        """Close the connection on its thread, then end the thread. Safe to repeat; a
        cancelled close still closes (the jobs are queued before the first await)."""
        if self._closed:
            return
        conn = self._conn
        done = self._submit(conn.close) if conn is not None else None
        self._closed = True
        self._jobs.put(None)
        if done is not None:
            await done


def _settle(fut: asyncio.Future, result: object, error: BaseException | None) -> None:
    if fut.done():  # the caller was cancelled
        return
    if error is None:
        fut.set_result(result)
    else:
        fut.set_exception(error)


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
