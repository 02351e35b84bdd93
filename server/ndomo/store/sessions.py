"""Sessions: created on demand, so no operation ever fails for a session 'not started'."""

from __future__ import annotations

import sqlite3
import uuid
from typing import Any

from ndomo.store.base import StoreBase
from ndomo.store.core import ensure_session_row, session_from_row
from ndomo.store.errors import Invalid, NotFound
from ndomo.store.models import Session

_UNSET: Any = object()


class SessionOps(StoreBase):
    async def ensure_session(self, session_id: str | None = None) -> Session:
        """Return the session, creating it (or a fresh one when id is None) if needed."""
        if session_id is not None and (not isinstance(session_id, str) or not session_id.strip()):
            raise Invalid("session id must be a non-empty string", field="session_id")
        return session_from_row(await self._write(_ensure, session_id or str(uuid.uuid4())))

    async def get_session(self, session_id: str) -> Session:
        row = await self._one("SELECT * FROM sessions WHERE id = ?", (session_id,))
        if row is None:
            raise NotFound(f"no session {session_id!r}", field="session_id")
        return session_from_row(row)

    async def latest_session(self) -> Session | None:
        """The session used last (a turn's message, `session.open`), else the newest."""
        row = await self._one(
            # A touch in the same millisecond as another session's creation came after it.
            "SELECT * FROM sessions ORDER BY coalesce(used_at, created_at) DESC, "
            "used_at IS NOT NULL DESC, rowid DESC LIMIT 1"
        )
        return session_from_row(row) if row else None

    async def list_sessions(self, limit: int = 50, *, open_only: bool = False) -> list[Session]:
        where = "WHERE ended_at IS NULL" if open_only else ""
        rows = await self._all(
            f"SELECT * FROM sessions {where} ORDER BY created_at DESC, rowid DESC LIMIT ?", (limit,)
        )
        return [session_from_row(r) for r in rows]

    async def update_session(
        self,
        session_id: str,
        *,
        mode: str | None = _UNSET,
        agent: str | None = _UNSET,
        committed_plan_id: str | None = _UNSET,
        title: str | None = _UNSET,
    ) -> Session:
        sets = {
            col: val
            for col, val in (
                ("mode", mode),
                ("agent", agent),
                ("committed_plan_id", committed_plan_id),
                ("title", title),
            )
            if val is not _UNSET
        }
        return session_from_row(await self._write(_update, session_id, sets))


# ------------------------------------------------------------ on the store's thread


def _get(conn: sqlite3.Connection, session_id: str) -> sqlite3.Row:
    (row,) = conn.execute("SELECT * FROM sessions WHERE id = ?", (session_id,)).fetchall()
    return row


def _ensure(conn: sqlite3.Connection, session_id: str) -> sqlite3.Row:
    ensure_session_row(conn, session_id)
    return _get(conn, session_id)


def _update(conn: sqlite3.Connection, session_id: str, sets: dict[str, Any]) -> sqlite3.Row:
    ensure_session_row(conn, session_id)
    if sets:
        conn.execute(
            f"UPDATE sessions SET {', '.join(f'{c} = ?' for c in sets)} WHERE id = ?",
            (*sets.values(), session_id),
        )
    return _get(conn, session_id)
