"""Remembered permission answers ('always allow npm test here'); deny beats allow."""

from __future__ import annotations

import sqlite3
from fnmatch import fnmatchcase

from ndomo.store.base import StoreBase
from ndomo.store.core import ensure_session_row
from ndomo.store.db import now
from ndomo.store.errors import Invalid, NotFound
from ndomo.store.models import Approval


class ApprovalOps(StoreBase):
    async def save_approval(
        self,
        permission: str,
        pattern: str,
        action: str,
        *,
        scope: str = "session",
        session_id: str | None = None,
    ) -> Approval:
        if scope not in ("session", "project"):
            raise Invalid(f"scope must be 'session' or 'project', got {scope!r}", field="scope")
        if action not in ("allow", "deny"):
            raise Invalid(f"action must be 'allow' or 'deny', got {action!r}", field="action")
        if scope == "session" and not session_id:
            raise Invalid("a session-scoped approval needs a session_id", field="session_id")
        if not permission or not pattern:
            raise Invalid("permission and pattern must be non-empty", field="pattern")
        row = await self._write(_save, permission, pattern, action, scope, session_id)
        return Approval.model_validate(dict(row))

    async def list_approvals(self, session_id: str | None = None) -> list[Approval]:
        """Project-wide approvals plus, when given, that session's."""
        rows = await self._all(
            "SELECT * FROM approvals WHERE scope = 'project' OR session_id = ? ORDER BY id",
            (session_id,),
        )
        return [Approval.model_validate(dict(r)) for r in rows]

    async def revoke_approval(self, approval_id: int) -> None:
        await self._write(_revoke, approval_id)

    async def find_approval(
        self, permission: str, subject: str, session_id: str | None = None
    ) -> str | None:
        """'deny', 'allow' or None; patterns are fnmatch globs over the subject."""
        rows = await self._all(
            "SELECT pattern, action FROM approvals WHERE permission = ?"
            " AND (scope = 'project' OR session_id = ?)",
            (permission, session_id),
        )
        hits = {r["action"] for r in rows if fnmatchcase(subject, r["pattern"])}
        if "deny" in hits:
            return "deny"
        return "allow" if "allow" in hits else None


# ------------------------------------------------------------ on the store's thread


def _save(
    conn: sqlite3.Connection,
    permission: str,
    pattern: str,
    action: str,
    scope: str,
    session_id: str | None,
) -> sqlite3.Row:
    if session_id:
        ensure_session_row(conn, session_id)
    existing = conn.execute(
        "SELECT id FROM approvals WHERE scope = ? AND coalesce(session_id, '') = ?"
        " AND permission = ? AND pattern = ?",
        (scope, session_id or "", permission, pattern),
    ).fetchall()
    if existing:
        aid = existing[0][0]
        conn.execute(
            "UPDATE approvals SET action = ?, created_at = ? WHERE id = ?", (action, now(), aid)
        )
    else:
        aid = conn.execute(
            "INSERT INTO approvals(scope, session_id, permission, pattern, action, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (scope, session_id if scope == "session" else None, permission, pattern, action, now()),
        ).lastrowid
    (row,) = conn.execute("SELECT * FROM approvals WHERE id = ?", (aid,)).fetchall()
    return row


def _revoke(conn: sqlite3.Connection, approval_id: int) -> None:
    if conn.execute("DELETE FROM approvals WHERE id = ?", (approval_id,)).rowcount != 1:
        raise NotFound(f"no approval with id {approval_id}", field="id")
