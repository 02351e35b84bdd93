"""Remembered permission answers ('always allow npm test here'); deny beats allow.

They are the user's, not the repository's: kept in the user's own store
(`store/user.py`, `$XDG_DATA_HOME/ndomo/user.db`) keyed by the workspace's real path, so a
`.ndomo/ndomo.db` shipped with a repository (its `approvals` table included) approves nothing.
"""

from __future__ import annotations

import asyncio
import os

from ndomo.store import user
from ndomo.store.base import StoreBase
from ndomo.store.core import ensure_session_row
from ndomo.store.errors import Invalid
from ndomo.store.models import Approval


class ApprovalOps(StoreBase):
    @property
    def _owner(self) -> str:
        return os.path.realpath(self.workspace)

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
        if scope == "session" and session_id:  # a session is created on first use, as elsewhere
            await self._write(ensure_session_row, session_id)
        row = await asyncio.to_thread(
            user.save_approval, self._owner, permission, pattern, action, scope, session_id
        )
        return Approval.model_validate(row)

    async def list_approvals(self, session_id: str | None = None) -> list[Approval]:
        """Project-wide approvals plus, when given, that session's."""
        rows = await asyncio.to_thread(user.list_approvals, self._owner, session_id)
        return [Approval.model_validate(r) for r in rows]

    async def revoke_approval(self, approval_id: int) -> None:
        await asyncio.to_thread(user.revoke_approval, self._owner, approval_id)

    async def find_approval(
        self, permission: str, subject: str, session_id: str | None = None
    ) -> str | None:
        """'deny', 'allow' or None; patterns are fnmatch globs over the subject."""
        return await asyncio.to_thread(
            user.find_approval, self._owner, permission, subject, session_id
        )

    async def matching_approvals(
        self, permission: str, subject: str, session_id: str | None = None
    ) -> list[tuple[str, str]]:
        """(pattern, action) of every saved approval whose fnmatch pattern matches the subject."""
        return await asyncio.to_thread(
            user.matching_approvals, self._owner, permission, subject, session_id
        )
