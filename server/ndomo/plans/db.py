"""Connection set-up and write transactions shared by the store and the migrations.

Several processes (editors, the CLI) share one file, so every write is a
`BEGIN IMMEDIATE` transaction: the write lock is taken up front, `busy_timeout`
waits for it, and a still-busy BEGIN is retried with back-off instead of failing.
"""

from __future__ import annotations

import asyncio
import random
import sqlite3
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path

import aiosqlite

BUSY_TIMEOUT_MS = 5000
BEGIN_ATTEMPTS = 8
# Every connection's settings besides WAL (set once per file): benchmarks' raw sqlite3
# twins use the same, so a comparison is never NORMAL against FULL.
PRAGMAS = (f"busy_timeout = {BUSY_TIMEOUT_MS}", "foreign_keys = ON", "synchronous = NORMAL")


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def is_busy(exc: BaseException) -> bool:
    if not isinstance(exc, sqlite3.OperationalError):
        return False
    msg = str(exc).lower()
    return "locked" in msg or "busy" in msg


async def connect(path: Path) -> aiosqlite.Connection:
    """Open a connection in autocommit mode: transactions are always explicit."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = aiosqlite.connect(str(path), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
    # aiosqlite's worker thread is not a daemon: one connection left open (a close that was
    # cancelled) would keep the process alive forever. SQLite's journal makes dying safe.
    worker = getattr(conn, "_thread", conn)
    if isinstance(worker, threading.Thread):
        worker.daemon = True
    conn = await conn
    conn.row_factory = sqlite3.Row
    for pragma in PRAGMAS[:2]:
        await conn.execute(f"PRAGMA {pragma}")
    for attempt in range(BEGIN_ATTEMPTS):
        try:
            await conn.execute("PRAGMA journal_mode = WAL")
            break
        except sqlite3.OperationalError as exc:
            if not is_busy(exc) or attempt == BEGIN_ATTEMPTS - 1:
                await conn.close()
                raise
            await asyncio.sleep(0.05 * (attempt + 1))
    for pragma in PRAGMAS[2:]:
        await conn.execute(f"PRAGMA {pragma}")
    return conn


def begin_backoff(attempt: int) -> float:
    """Seconds to wait before retrying a busy BEGIN IMMEDIATE (jittered, doubling, ≤ 1 s)."""
    return min(1.0, 0.02 * 2**attempt) * (0.5 + random.random())


@asynccontextmanager
async def write_tx(conn: aiosqlite.Connection) -> AsyncIterator[aiosqlite.Connection]:
    """BEGIN IMMEDIATE … COMMIT, rolled back on any error; BEGIN retried while busy."""
    for attempt in range(BEGIN_ATTEMPTS):
        try:
            await conn.execute("BEGIN IMMEDIATE")
            break
        except sqlite3.OperationalError as exc:
            if not is_busy(exc) or attempt == BEGIN_ATTEMPTS - 1:
                raise
            await asyncio.sleep(begin_backoff(attempt))
    try:
        yield conn
    except BaseException:
        if conn.in_transaction:
            await conn.execute("ROLLBACK")
        raise
    try:
        await conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            await conn.execute("ROLLBACK")
        raise


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
