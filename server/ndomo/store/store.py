"""PlanStore: the one object through which ndomo reads and writes `.ndomo/ndomo.db`."""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

from ndomo.store.approvals import ApprovalOps
from ndomo.store.checkpoints import CheckpointOps
from ndomo.store.db import Db
from ndomo.store.memories import MemoryOps
from ndomo.store.messages import MessageOps
from ndomo.store.migrations import migrate
from ndomo.store.model_caps import ModelCapsOps
from ndomo.store.plan_ops import PlanOps
from ndomo.store.sessions import SessionOps
from ndomo.store.task_ops import TaskOps
from ndomo.store.turns import TurnOps
from ndomo.store.user import stamp_new_db
from ndomo.store.watch import Stamp, file_stamp

STAMP_SETTLE_NS = 50_000_000  # 50 ms: well above the kernel's coarse mtime tick


class PlanStore(
    SessionOps,
    PlanOps,
    TaskOps,
    TurnOps,
    ApprovalOps,
    MemoryOps,
    MessageOps,
    ModelCapsOps,
    CheckpointOps,
):
    def __init__(self, db: Db, db_path: Path, workspace: Path) -> None:
        self._init_base(db, db_path, workspace)

    @classmethod
    async def open(cls, db_path: Path, *, workspace: Path) -> PlanStore:
        """Open (creating parent folders and the file) and migrate to the latest schema."""
        db_path = Path(db_path)
        fresh = not db_path.exists()
        db = await Db.open(db_path)
        try:
            # this user's own database: its id goes to the user's store first, before the
            # schema, so another process loading the folder meanwhile never sees a database
            # with tables and no id (which it would take for one ndomo did not create here)
            if fresh:
                await db.call(stamp_new_db, os.path.realpath(workspace))
            await db.call(migrate)
        except BaseException:
            await db.close()
            raise
        return cls(db, db_path, Path(workspace))

    async def close(self) -> None:
        """Close the connection and end the store's thread; safe to call twice."""
        await self._db.close()

    def change_stamp(self) -> Stamp | None:
        """A cheap signature of the database files (size, mtime, inode of the db and its WAL).

        The store's one way to tell that something was committed, by any process: every
        commit appends to the WAL or rewrites the db, so an unchanged stamp means nothing
        was committed since — callers may reuse what they read then. `DbWatch` is woken by
        changes to the same files. Two `stat`s, no query. None when it cannot be trusted: a
        file changed within the last `STAMP_SETTLE_NS` (mtime is coarse; a later write
        could keep the same stamp).
        """
        stamp = file_stamp(self.db_path)
        newest = max((s[1] for s in stamp if s is not None), default=0)
        if time.time_ns() - newest < STAMP_SETTLE_NS:
            return None
        return stamp

    async def trace(self, callback: Callable[[str], object] | None) -> None:
        """Report every statement the store runs to `callback` (None stops): the CI's
        query-plan budget reads them."""
        await self._db.call(sqlite3.Connection.set_trace_callback, callback)

    async def ping(self) -> bool:
        try:
            row = await self._one("SELECT 1")
        except (sqlite3.Error, OSError):  # a health probe answers, it does not raise
            return False
        return row is not None and row[0] == 1
