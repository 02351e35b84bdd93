"""Remembered permission answers ('always allow npm test here'); deny beats allow."""

from __future__ import annotations

from fnmatch import fnmatchcase

from ndomo.plans.base import StoreBase
from ndomo.plans.db import now
from ndomo.plans.errors import Invalid, NotFound
from ndomo.plans.models import Approval


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
        async with self._tx():
            if session_id:
                await self._ensure_session_row(session_id)  # type: ignore[attr-defined]  # a sibling mixin of PlanStore provides it
            existing = await self._one(
                "SELECT id FROM approvals WHERE scope = ? AND coalesce(session_id, '') = ?"
                " AND permission = ? AND pattern = ?",
                (scope, session_id or "", permission, pattern),
            )
            if existing:
                await self._exec(
                    "UPDATE approvals SET action = ?, created_at = ? WHERE id = ?",
                    (action, now(), existing[0]),
                )
                aid = existing[0]
            else:
                aid = await self._insert(
                    "INSERT INTO approvals(scope, session_id, permission, pattern, action, created_at)"
                    " VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        scope,
                        session_id if scope == "session" else None,
                        permission,
                        pattern,
                        action,
                        now(),
                    ),
                )
            row = await self._one("SELECT * FROM approvals WHERE id = ?", (aid,))
        assert row is not None  # written in this transaction
        return Approval.model_validate(dict(row))

    async def list_approvals(self, session_id: str | None = None) -> list[Approval]:
        """Project-wide approvals plus, when given, that session's."""
        rows = await self._all(
            "SELECT * FROM approvals WHERE scope = 'project' OR session_id = ? ORDER BY id",
            (session_id,),
        )
        return [Approval.model_validate(dict(r)) for r in rows]

    async def revoke_approval(self, approval_id: int) -> None:
        async with self._tx():
            if await self._exec("DELETE FROM approvals WHERE id = ?", (approval_id,)) != 1:
                raise NotFound(f"no approval with id {approval_id}", field="id")

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
