"""Statement programs: store logic written once, run in one hop to aiosqlite's thread.

Each statement sent to aiosqlite is a round trip to its thread (~0.1 ms), which is most
of a small query's cost. A *program* is a generator that yields `(sql, params)` and is
sent back the statement's rows (a list of `sqlite3.Row`); its return value is the
result. `run_program` drives it synchronously on a `sqlite3.Connection` — on aiosqlite's
thread, so the whole program is one hop — and `StoreBase` drives the same generator
through aiosqlite's public API when the private hop is missing. The logic exists once.

    def rename(pid, title):
        (row,) = yield "SELECT * FROM plans WHERE id = ?", (pid,)
        yield "UPDATE plans SET title = ? WHERE id = ?", (title, pid)
        return row["title"]
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Generator
from typing import Any, TypeVar

from ndomo.plans.db import is_busy

T = TypeVar("T")
Step = tuple[str, tuple[Any, ...]]
Program = Generator[Step, list[sqlite3.Row], T]


class BeginBusy(Exception):
    """BEGIN IMMEDIATE found the database locked after busy_timeout: the caller retries."""


def run_program(conn: sqlite3.Connection, program: Program[T]) -> T:
    """Run every statement of `program` on `conn`, in the caller's transaction."""
    try:
        step = next(program)
        while True:
            sql, params = step
            step = program.send(conn.execute(sql, params).fetchall())
    except StopIteration as done:
        return done.value


def run_write(conn: sqlite3.Connection, make: Callable[[], Program[T]]) -> T:
    """BEGIN IMMEDIATE, the program, COMMIT; rolled back on any error.

    A busy BEGIN raises BeginBusy (nothing was done), so the event-loop side can wait
    without holding aiosqlite's thread and try again, as `write_tx` does.
    """
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:
        if is_busy(exc):
            raise BeginBusy(str(exc)) from exc
        raise
    try:
        result = run_program(conn, make())
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return result
