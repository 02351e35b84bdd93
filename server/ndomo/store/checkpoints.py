"""Checkpoint ids per turn and per command, and the conversation a rewind takes back.

A checkpoint row names a snapshot of the workspace's files (a commit of the shadow
repository, see features/checkpoints) taken at a turn's start (`turn_start`), at its end
(`turn_end`) or before one of its shell commands (`command`, its note the command).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from ndomo.store.base import StoreBase
from ndomo.store.db import now
from ndomo.store.models import _Out

CHECKPOINT_KINDS = ("turn_start", "turn_end", "command")


class Checkpoint(_Out):
    id: int
    session_id: str
    turn_id: int | None = None
    kind: str
    commit_id: str
    note: str | None = None
    created_at: str


class CheckpointOps(StoreBase):
    async def add_checkpoint(
        self, session_id: str, turn_id: int | None, kind: str, commit_id: str, note: str | None
    ) -> Checkpoint:
        row = await self._write(_add, session_id, turn_id, kind, commit_id, note)
        return Checkpoint.model_validate(dict(row))

    async def add_checkpoints(
        self, session_id: str, turn_id: int | None, rows: Sequence[tuple[str, str, str | None]]
    ) -> list[Checkpoint]:
        """Several checkpoints of one turn, (kind, commit, note) each, in one transaction
        and one hop: a turn that ran no tool records its start and its end together."""
        out = await self._write(
            lambda c: [
                _add(c, session_id, turn_id, kind, commit, note) for kind, commit, note in rows
            ]
        )
        return [Checkpoint.model_validate(dict(r)) for r in out]

    async def session_checkpoints(self, session_id: str) -> list[Checkpoint]:
        rows = await self._all(
            "SELECT * FROM checkpoints WHERE session_id = ? ORDER BY id", (session_id,)
        )
        return [Checkpoint.model_validate(dict(r)) for r in rows]

    async def rewind_messages(self, session_id: str, from_turn_id: int) -> int:
        """Take back the session's messages of turn `from_turn_id` and every later one
        (their rows stay, marked); returns how many."""
        return await self._write(_rewind, session_id, from_turn_id, now())


def _add(
    conn: sqlite3.Connection,
    session_id: str,
    turn_id: int | None,
    kind: str,
    commit_id: str,
    note: str | None,
) -> sqlite3.Row:
    (row,) = conn.execute(
        "INSERT INTO checkpoints(session_id, turn_id, kind, commit_id, note, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?) RETURNING *",
        (session_id, turn_id, kind, commit_id, note, now()),
    ).fetchall()
    return row


def _rewind(conn: sqlite3.Connection, session_id: str, from_turn_id: int, ts: str) -> int:
    # The turn's first message and every one after it (ids are in order), whichever turn
    # (or none) stored it, less those an earlier rewind took back already.
    first = conn.execute(
        "SELECT min(id) FROM session_messages WHERE session_id = ? AND turn_id >= ?",
        (session_id, from_turn_id),
    ).fetchone()[0]
    if first is None:
        return 0
    last = conn.execute(
        "SELECT max(id) FROM session_messages WHERE session_id = ?", (session_id,)
    ).fetchone()[0]
    (count,) = conn.execute(
        "SELECT count(*) FROM session_messages m WHERE m.session_id = ? AND m.id >= ?"
        " AND NOT EXISTS (SELECT 1 FROM message_rewinds r WHERE r.session_id = m.session_id"
        " AND m.id BETWEEN r.first_id AND r.last_id)",
        (session_id, first),
    ).fetchone()
    conn.execute(
        "INSERT INTO message_rewinds(session_id, first_id, last_id, created_at)"
        " VALUES (?, ?, ?, ?)",
        (session_id, first, last, ts),
    )
    return int(count)
