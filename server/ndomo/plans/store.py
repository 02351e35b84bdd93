"""PlanStore: the one object through which ndomo reads and writes `.ndomo/ndomo.db`."""

from __future__ import annotations

import os
from pathlib import Path

import aiosqlite

from ndomo.plans.approvals import ApprovalOps
from ndomo.plans.db import connect
from ndomo.plans.memories import MemoryOps
from ndomo.plans.messages import MessageOps
from ndomo.plans.migrations import migrate
from ndomo.plans.model_caps import ModelCapsOps
from ndomo.plans.plan_ops import PlanOps
from ndomo.plans.sessions import SessionOps
from ndomo.plans.task_ops import TaskOps
from ndomo.plans.turns import TurnOps

STAMP_SETTLE_NS = 50_000_000  # 50 ms: well above the kernel's coarse mtime tick


class PlanStore(
    SessionOps, PlanOps, TaskOps, TurnOps, ApprovalOps, MemoryOps, MessageOps, ModelCapsOps
):
    def __init__(self, conn: aiosqlite.Connection, db_path: Path, workspace: Path) -> None:
        self._init_base(conn, db_path, workspace)
        self._watch: aiosqlite.Connection | None = None
        self._closed = False

    @classmethod
    async def open(cls, db_path: Path, *, workspace: Path) -> PlanStore:
        """Open (creating parent folders and the file) and migrate to the latest schema."""
        db_path = Path(db_path)
        conn = await connect(db_path)
        try:
            await migrate(conn)
        except BaseException:
            await conn.close()
            raise
        return cls(conn, db_path, Path(workspace))

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        # The main connection closes even when closing the watcher is cancelled or fails:
        # an unclosed aiosqlite connection leaves its worker thread waiting.
        watch, self._watch = self._watch, None
        try:
            if watch is not None:
                await watch.close()
        finally:
            await self._conn.close()

    async def data_version(self) -> int:
        """Changes whenever any connection (this process or another) commits a write.

        A dedicated connection is used because PRAGMA data_version ignores the
        asking connection's own commits.
        """
        if self._watch is None:
            self._watch = await connect(self.db_path)
        async with self._watch.execute("PRAGMA data_version") as cur:
            row = await cur.fetchone()
        assert row is not None  # a PRAGMA that reads a value always returns one row
        return int(row[0])

    def change_stamp(self) -> tuple | None:
        """A cheap signature of the database files (size, mtime of the db and its WAL).

        Any commit, by any process, appends to the WAL or rewrites the db, so an unchanged
        stamp means nothing was committed since — callers may reuse what they read then.
        Two `stat`s, no query. None when it cannot be trusted: a file changed within the
        last `STAMP_SETTLE_NS` (mtime is coarse; a later write could keep the same stamp).
        """
        import time

        stamp: list[tuple[int, int, int] | None] = []
        for p in (self.db_path, self.db_path.with_name(self.db_path.name + "-wal")):
            try:
                st = os.stat(p)
            except OSError:
                stamp.append(None)
                continue
            if time.time_ns() - st.st_mtime_ns < STAMP_SETTLE_NS:
                return None
            stamp.append((st.st_size, st.st_mtime_ns, st.st_ino))
        return tuple(stamp)

    async def ping(self) -> bool:
        try:
            row = await self._one("SELECT 1")
        except Exception:  # noqa: BLE001 — a health probe answers, it does not raise
            return False
        return row is not None and row[0] == 1
