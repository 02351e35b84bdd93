"""Turns and their file edits: the record that makes undo and crash recovery possible."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from ndomo.store.base import StoreBase, loads, row_dict
from ndomo.store.core import ensure_session_row
from ndomo.store.db import now
from ndomo.store.errors import Invalid, NotFound
from ndomo.store.models import TURN_STATUSES, Turn, TurnEdit
from ndomo.store.owner import PidAlive, hostname, owner_is_gone, pid_alive, process_owner


def turn_from_row(row: Any) -> Turn:
    d = row_dict(row)
    d["selection"] = loads(d.get("selection"), None)
    return Turn.model_validate(d)


class TurnOps(StoreBase):
    async def start_turn(
        self,
        session_id: str,
        agent: str | None,
        mode: str | None,
        prompt: str | None,
        parent_turn_id: int | None = None,
        *,
        owner: str | None = None,
        selection: dict[str, Any] | None = None,
    ) -> Turn:
        """`owner` defaults to this process ("<hostname>:<pid>"). `selection`: the file,
        lines and text a code action's turn is about. One hop: it is on every turn's way to
        its first token."""
        owner = owner or process_owner()
        row = await self._write(
            _start,
            session_id,
            agent,
            mode,
            prompt,
            parent_turn_id,
            owner,
            json.dumps(selection, sort_keys=True) if selection else None,
        )
        return turn_from_row(row)

    async def get_turn(self, turn_id: int) -> Turn:
        row = await self._one("SELECT * FROM turns WHERE id = ?", (turn_id,))
        if row is None:
            raise NotFound(f"no turn with id {turn_id}", field="turn_id")
        return turn_from_row(row)

    async def finish_turn(
        self,
        turn_id: int,
        status: str,
        *,
        tokens_in: int | None = None,
        tokens_out: int | None = None,
        error: str | None = None,
    ) -> Turn:
        if status not in TURN_STATUSES:
            raise Invalid(
                f"unknown turn status {status!r}; expected one of {', '.join(TURN_STATUSES)}",
                field="status",
            )
        finished = None if status == "running" else now()
        row = await self._write(_finish, turn_id, status, finished, tokens_in, tokens_out, error)
        return turn_from_row(row)

    async def session_usage(self, session_id: str) -> tuple[int, int]:
        """The tokens (prompt, completion) the session's top-level turns used, as stored."""
        row = await self._one(
            "SELECT coalesce(sum(tokens_in), 0) AS i, coalesce(sum(tokens_out), 0) AS o"
            " FROM turns WHERE session_id = ? AND parent_turn_id IS NULL",
            (session_id,),
        )
        return (int(row["i"]), int(row["o"])) if row is not None else (0, 0)

    async def mark_interrupted_turns(
        self, *, alive: PidAlive = pid_alive, host: str | None = None
    ) -> int:
        """At start-up: mark 'interrupted' the running turns whose owner process is gone.

        Only turns of this host whose pid is not alive (or without an owner, from before
        v11) are touched: another server sharing the database keeps its live turns.
        Returns how many turns were marked.
        """
        host = hostname() if host is None else host
        return await self._write(_mark_interrupted, host, alive)

    async def add_turn_edit(
        self, turn_id: int, path: str, before: str | None, after: str | None
    ) -> TurnEdit:
        seq = await self._write(_add_edit, turn_id, path, before, after)
        return TurnEdit(turn_id=turn_id, seq=seq, path=path, before=before, after=after)

    async def turn_edits(self, turn_id: int) -> list[TurnEdit]:
        rows = await self._all(
            "SELECT * FROM turn_edits WHERE turn_id = ? ORDER BY seq", (turn_id,)
        )
        return [TurnEdit.model_validate(dict(r)) for r in rows]

    async def list_turns(self, session_id: str, limit: int = 200) -> list[Turn]:
        rows = await self._all(
            "SELECT * FROM turns WHERE session_id = ? ORDER BY id LIMIT ?", (session_id, limit)
        )
        return [turn_from_row(r) for r in rows]


# ------------------------------------------------------------ on the store's thread


def _start(
    conn: sqlite3.Connection,
    session_id: str,
    agent: str | None,
    mode: str | None,
    prompt: str | None,
    parent_turn_id: int | None,
    owner: str,
    selection: str | None,
) -> sqlite3.Row:
    ensure_session_row(conn, session_id)
    if (
        parent_turn_id is not None
        and not conn.execute("SELECT id FROM turns WHERE id = ?", (parent_turn_id,)).fetchall()
    ):
        raise NotFound(f"no turn with id {parent_turn_id}", field="turn_id")
    (row,) = conn.execute(
        "INSERT INTO turns(session_id, parent_turn_id, agent, mode, prompt, status, started_at,"
        " owner, selection) VALUES (?, ?, ?, ?, ?, 'running', ?, ?, ?) RETURNING *",
        (session_id, parent_turn_id, agent, mode, prompt, now(), owner, selection),
    ).fetchall()
    return row


def _finish(
    conn: sqlite3.Connection,
    turn_id: int,
    status: str,
    finished: str | None,
    tokens_in: int | None,
    tokens_out: int | None,
    error: str | None,
) -> sqlite3.Row:
    rows = conn.execute(
        "UPDATE turns SET status = ?, finished_at = ?, tokens_in = coalesce(?, tokens_in),"
        " tokens_out = coalesce(?, tokens_out), error = coalesce(?, error) WHERE id = ? RETURNING *",
        (status, finished, tokens_in, tokens_out, error, turn_id),
    ).fetchall()
    if not rows:
        raise NotFound(f"no turn with id {turn_id}", field="turn_id")
    return rows[0]


def _mark_interrupted(conn: sqlite3.Connection, host: str, alive: PidAlive) -> int:
    rows = conn.execute("SELECT id, owner FROM turns WHERE status = 'running'").fetchall()
    dead = [int(r["id"]) for r in rows if owner_is_gone(r["owner"], host=host, alive=alive)]
    marked = 0
    stamp = now()
    for i in range(0, len(dead), 500):
        chunk = dead[i : i + 500]
        marked += conn.execute(
            "UPDATE turns SET status = 'interrupted', finished_at = ?,"
            " error = coalesce(error, 'interrupted: the process running it stopped')"
            f" WHERE status = 'running' AND id IN ({','.join('?' * len(chunk))})",
            (stamp, *chunk),
        ).rowcount
    return marked


def _add_edit(
    conn: sqlite3.Connection, turn_id: int, path: str, before: str | None, after: str | None
) -> int:
    if not conn.execute("SELECT 1 FROM turns WHERE id = ?", (turn_id,)).fetchall():
        raise NotFound(f"no turn with id {turn_id}", field="turn_id")
    ((seq,),) = conn.execute(
        "SELECT coalesce(max(seq), 0) + 1 FROM turn_edits WHERE turn_id = ?", (turn_id,)
    ).fetchall()
    conn.execute(
        "INSERT INTO turn_edits(turn_id, seq, path, before, after) VALUES (?, ?, ?, ?, ?)",
        (turn_id, seq, path, before, after),
    )
    return int(seq)
