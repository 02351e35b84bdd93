"""A session's conversation, message by message, and the claim that keeps its turns one at a time.

Every message is stored as it happens (the prompt, each answer with its tool calls, each
tool result), so a restarted server, a reloaded editor or the next `ndomo run` carries
on with the whole conversation. Nothing here trims: the model's budget is applied when a
request is built, never to what is stored.

A claim row says "a turn of this session runs in process <host>:<pid>". Only one exists
per session; a second process is refused while the owner lives, and a dead owner's claim
is taken over (its turn was interrupted).
"""

from __future__ import annotations

import sqlite3
from typing import Any

from pydantic import Field

from ndomo.store.base import StoreBase, dumps, loads, row_dict
from ndomo.store.core import ensure_session_row, session_from_row
from ndomo.store.db import now
from ndomo.store.errors import Invalid, Refused
from ndomo.store.models import Session, _Out
from ndomo.store.owner import PidAlive, hostname, owner_is_gone, pid_alive, process_owner

ROLES = ("user", "assistant", "tool")


class StoredMessage(_Out):
    id: int
    session_id: str
    turn_id: int | None = None
    role: str
    content: str | None = None
    tool_calls: list[dict[str, Any]] = Field(default_factory=list)  # [{id, name, arguments}]
    tool_call_id: str | None = None
    name: str | None = None
    status: str | None = None  # a tool result's: done, failed, refused, cancelled
    # a tool result's card details: {decision, sandbox, files} (runtime/callnotes.py)
    details: dict[str, Any] | None = None
    created_at: str


class SessionBusy(Refused):
    """Another live turn holds the session."""

    def __init__(self, session_id: str, owner: str) -> None:
        super().__init__(
            f"a turn is already running in session {session_id} (process {owner}); "
            "wait for it or cancel it first (ndomo.cancel in the editor that runs it)",
            field="session",
        )
        self.owner = owner


def storable(text: str | None) -> str | None:
    """``text`` with each lone surrogate (no character: SQLite cannot store it) as U+FFFD.

    A message that cannot be stored breaks the conversation every later turn reads
    back (a tool result without its call), so what cannot be encoded is replaced, not lost.
    """
    if text is None:
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


# Not in a span a conversation rewind took back (store/checkpoints.py writes them).
_NOT_REWOUND = (
    "NOT EXISTS (SELECT 1 FROM message_rewinds r WHERE r.session_id = m.session_id"
    " AND m.id BETWEEN r.first_id AND r.last_id)"
)


def _message(row: Any) -> StoredMessage:
    d = row_dict(row)
    d["tool_calls"] = loads(d.get("tool_calls"), [])
    d["details"] = loads(d.get("details"), None)
    return StoredMessage.model_validate(d)


class MessageOps(StoreBase):
    async def add_message(
        self,
        session_id: str,
        role: str,
        content: str | None = None,
        *,
        turn_id: int | None = None,
        tool_calls: list[dict[str, Any]] | None = None,
        tool_call_id: str | None = None,
        name: str | None = None,
        status: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> int:
        """Append one message to the session's conversation; returns its id. `status`: a
        tool result's (done, failed, refused, cancelled); `details`: what its card shows
        beside it (decision, sandbox, files)."""
        if role not in ROLES:
            raise Invalid(
                f"message role must be one of {', '.join(ROLES)}, got {role!r}", field="role"
            )
        return await self._write(
            _add,
            session_id,
            turn_id,
            role,
            storable(content),
            storable(dumps(tool_calls or [])) or "[]",
            storable(tool_call_id),
            storable(name),
            status,
            storable(dumps(details)) if details else None,
        )

    async def session_messages(
        self, session_id: str, *, top_level: bool = True, after_id: int = 0
    ) -> list[StoredMessage]:
        """The conversation in order. `top_level`: without the messages of delegated
        sub-agent turns (they are stored, but are not the session's conversation).
        `after_id`: only the messages stored after that one (messages are append-only, so a
        reader that kept the earlier ones reads only what is new). Messages a conversation
        rewind took back are not part of it."""
        if top_level:
            sql = (
                "SELECT m.* FROM session_messages m LEFT JOIN turns t ON t.id = m.turn_id"
                " WHERE m.session_id = ? AND m.id > ? AND t.parent_turn_id IS NULL"
                f" AND {_NOT_REWOUND} ORDER BY m.id"
            )
        else:
            sql = (
                "SELECT * FROM session_messages m WHERE m.session_id = ? AND m.id > ?"
                f" AND {_NOT_REWOUND} ORDER BY m.id"
            )
        return [_message(r) for r in await self._all(sql, (session_id, after_id))]

    async def touch_session(self, session_id: str) -> None:
        """Mark the session as the latest used (what `ndomo run` and a fresh server resume)."""
        await self._write(_touch, session_id, now())

    # -- one turn at a time, across processes ------------------------------------------------
    async def claim_session(
        self, session_id: str, *, owner: str | None = None, alive: PidAlive = pid_alive
    ) -> Session:
        """Claim the session for a turn; SessionBusy when a live process holds it. Returns
        the session's row as the claim found it (mode, agent … another process may have
        changed), read in the same transaction: the turn needs no read of its own."""
        owner = owner or process_owner()
        return session_from_row(await self._write(_claim, session_id, owner, alive))

    async def release_session(self, session_id: str, *, owner: str | None = None) -> bool:
        """Drop this owner's claim; True when there was one."""
        owner = owner or process_owner()
        n = await self._write(
            lambda c: (
                c.execute(
                    "DELETE FROM session_claims WHERE session_id = ? AND owner = ?",
                    (session_id, owner),
                ).rowcount
            )
        )
        return n > 0

    async def session_claim(self, session_id: str) -> str | None:
        row = await self._one(
            "SELECT owner FROM session_claims WHERE session_id = ?", (session_id,)
        )
        return row["owner"] if row else None


# ------------------------------------------------------------ on the store's thread


def _touch(conn: sqlite3.Connection, session_id: str, ts: str) -> None:
    ensure_session_row(conn, session_id)
    conn.execute("UPDATE sessions SET used_at = ? WHERE id = ?", (ts, session_id))


def _add(
    conn: sqlite3.Connection,
    session_id: str,
    turn_id: int | None,
    role: str,
    content: str | None,
    tool_calls: str,
    tool_call_id: str | None,
    name: str | None,
    status: str | None,
    details: str | None,
) -> int:
    ts = now()
    ensure_session_row(conn, session_id)
    mid = conn.execute(
        "INSERT INTO session_messages(session_id, turn_id, role, content, tool_calls,"
        " tool_call_id, name, status, details, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (session_id, turn_id, role, content, tool_calls, tool_call_id, name, status, details, ts),
    ).lastrowid
    conn.execute("UPDATE sessions SET used_at = ? WHERE id = ?", (ts, session_id))
    return int(mid or 0)


def _claim(conn: sqlite3.Connection, session_id: str, owner: str, alive: PidAlive) -> sqlite3.Row:
    ensure_session_row(conn, session_id)
    rows = conn.execute(
        "SELECT owner FROM session_claims WHERE session_id = ?", (session_id,)
    ).fetchall()
    if rows:
        holder = rows[0]["owner"]
        if not owner_is_gone(holder, host=hostname(), alive=alive):
            raise SessionBusy(session_id, holder)
        conn.execute("DELETE FROM session_claims WHERE session_id = ?", (session_id,))
    conn.execute(
        "INSERT INTO session_claims(session_id, owner, claimed_at) VALUES (?, ?, ?)",
        (session_id, owner, now()),
    )
    (row,) = conn.execute("SELECT * FROM sessions WHERE id = ?", (session_id,)).fetchall()
    return row
