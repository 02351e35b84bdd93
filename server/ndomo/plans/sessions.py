"""Sessions: created on demand, so no operation ever fails for a session 'not started'."""

from __future__ import annotations

import sqlite3
import uuid
from typing import Any

from ndomo.plans.base import StoreBase, dumps, loads
from ndomo.plans.db import now
from ndomo.plans.errors import Invalid, NotFound
from ndomo.plans.models import Session
from ndomo.plans.program import Program

_UNSET: Any = object()


def ensure_session_row(session_id: str) -> Program[None]:
    """Make sure the session exists before something references it."""
    yield (
        "INSERT OR IGNORE INTO sessions(id, created_at, metadata) VALUES (?, ?, '{}')",
        (session_id, now()),
    )


def session_from_row(row: sqlite3.Row) -> Session:
    d = dict(row)
    d["metadata"] = loads(d.get("metadata"), {})
    return Session.model_validate(d)


class SessionOps(StoreBase):
    async def _ensure_session_row(self, session_id: str) -> None:
        """Inside a transaction: make sure the session exists before something references it."""
        await self._run(ensure_session_row(session_id))

    async def ensure_session(self, session_id: str | None = None) -> Session:
        """Return the session, creating it (or a fresh one when id is None) if needed."""
        if session_id is not None and (not isinstance(session_id, str) or not session_id.strip()):
            raise Invalid("session id must be a non-empty string", field="session_id")
        sid = session_id or str(uuid.uuid4())
        async with self._tx():
            await self._ensure_session_row(sid)
            return await self.get_session(sid)

    async def start_session(
        self,
        session_id: str | None = None,
        *,
        mode: str | None = None,
        agent: str | None = None,
        title: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> Session:
        async with self._tx():
            s = await self.ensure_session(session_id)
            await self._exec(
                "UPDATE sessions SET mode = coalesce(?, mode), agent = coalesce(?, agent),"
                " title = coalesce(?, title), metadata = coalesce(?, metadata), ended_at = NULL"
                " WHERE id = ?",
                (mode, agent, title, dumps(metadata) if metadata is not None else None, s.id),
            )
            return await self.get_session(s.id)

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
        sets, params = [], []
        for col, val in (
            ("mode", mode),
            ("agent", agent),
            ("committed_plan_id", committed_plan_id),
            ("title", title),
        ):
            if val is not _UNSET:
                sets.append(f"{col} = ?")
                params.append(val)
        async with self._tx():
            await self._ensure_session_row(session_id)
            if sets:
                await self._exec(
                    f"UPDATE sessions SET {', '.join(sets)} WHERE id = ?", (*params, session_id)
                )
            return await self.get_session(session_id)

    async def end_session(self, session_id: str, *, actor: str = "system") -> Session:
        """Close the session and abandon its plans still approved or executing."""
        from ndomo.plans.plan_ops import change_status  # plan_ops imports this module

        async with self._tx():
            await self._ensure_session_row(session_id)
            await self._exec(
                "UPDATE sessions SET ended_at = coalesce(ended_at, ?) WHERE id = ?",
                (now(), session_id),
            )
            rows = await self._all(
                "SELECT id FROM plans WHERE status IN ('approved', 'executing')"
                " AND (session_id = ? OR executed_by_session = ?)",
                (session_id, session_id),
            )
            abandoned = [r["id"] for r in rows]
            for pid in abandoned:
                await self._run(
                    change_status(
                        pid,
                        "abandoned",
                        actor=actor,
                        session_id=session_id,
                        force=False,
                        reason=f"session {session_id} ended",
                    )
                )
        for pid in abandoned:
            await self._archive_quietly(pid)  # type: ignore[attr-defined]  # a sibling mixin of PlanStore provides it
        return await self.get_session(session_id)
