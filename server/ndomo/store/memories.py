"""Memories: short facts, decisions and preferences, merged instead of repeated."""

from __future__ import annotations

import sqlite3
from difflib import SequenceMatcher

from ndomo.store.base import StoreBase
from ndomo.store.core import ensure_session_row
from ndomo.store.db import now
from ndomo.store.errors import Invalid, NotFound
from ndomo.store.models import Memory
from ndomo.store.text import fts_any, fts_query, normalise

SIMILAR = 0.9
CATEGORIES = ("fact", "decision", "preference")


class MemoryOps(StoreBase):
    async def remember(
        self,
        session_id: str | None,
        category: str,
        content: str,
        *,
        mode: str | None = None,
        from_web: bool = False,
    ) -> Memory:
        """Store a memory; a near-duplicate of the same category is updated instead (merged=True).

        Provenance: ``mode`` and ``session_id`` of the turn that saves it, and ``from_web``
        when that turn's context held web content. A merge takes the new turn's mode and
        session and keeps ``from_web`` once set (a web page's words stay marked)."""
        if category not in CATEGORIES:
            raise Invalid(
                f"category must be one of {', '.join(CATEGORIES)}, got {category!r}",
                field="category",
            )
        content = (content or "").strip()
        if not content:
            raise Invalid("memory content must not be empty", field="content")
        row, merged = await self._write(_remember, session_id, category, content, mode, from_web)
        return Memory.model_validate({**dict(row), "merged": merged})

    async def search_memories(
        self,
        query: str,
        limit: int = 10,
        *,
        category: str | None = None,
        any_word: bool = False,
        without_web: bool = False,
    ) -> list[Memory]:
        """Best matches first (bm25). `any_word`: a note sharing any meaningful word matches
        (for a prompt); otherwise every word must appear (for a search box).
        `without_web`: leave out notes saved by a turn that had read web content."""
        if category is not None and category not in CATEGORIES:
            raise Invalid(f"category must be one of {', '.join(CATEGORIES)}", field="category")
        match = (fts_any if any_word else fts_query)(query or "")
        if match is None:
            return []
        where = (" AND m.category = ?" if category else "") + (
            " AND m.from_web = 0" if without_web else ""
        )
        rows = await self._all(
            "SELECT m.* FROM memories_fts f JOIN memories m ON m.id = f.rowid"
            f" WHERE memories_fts MATCH ?{where} ORDER BY bm25(memories_fts) LIMIT ?",
            (match, *([category] if category else []), limit),
        )
        return [Memory.model_validate(dict(r)) for r in rows]

    async def delete_memory(self, memory_id: int) -> Memory:
        """Forget one note; returns what was deleted."""
        return Memory.model_validate(dict(await self._write(_delete, memory_id)))

    async def list_memories(self, category: str | None = None, limit: int = 100) -> list[Memory]:
        if category is not None and category not in CATEGORIES:
            raise Invalid(f"category must be one of {', '.join(CATEGORIES)}", field="category")
        sql = "SELECT * FROM memories" + (" WHERE category = ?" if category else "")
        params = ([category] if category else []) + [limit]
        rows = await self._all(sql + " ORDER BY updated_at DESC, id DESC LIMIT ?", params)
        return [Memory.model_validate(dict(r)) for r in rows]


# ------------------------------------------------------------ on the store's thread


def _remember(
    conn: sqlite3.Connection,
    session_id: str | None,
    category: str,
    content: str,
    mode: str | None,
    from_web: bool,
) -> tuple[sqlite3.Row, bool]:
    """The new or merged memory's row, and whether it was merged into a near-duplicate."""
    if session_id:
        ensure_session_row(conn, session_id)
    key = normalise(content)
    rows = conn.execute("SELECT id, content FROM memories WHERE category = ?", (category,))
    match = None
    for r in rows:
        other = normalise(r["content"])
        if other == key or SequenceMatcher(None, other, key).ratio() >= SIMILAR:
            match = r["id"]
            break
    ts = now()
    if match is not None:
        conn.execute(
            "UPDATE memories SET content = ?, updated_at = ?, hits = hits + 1,"
            " session_id = coalesce(?, session_id), mode = ?, from_web = max(from_web, ?)"
            " WHERE id = ?",
            (content, ts, session_id, mode, int(from_web), match),
        )
        mid = match
    else:
        mid = conn.execute(
            "INSERT INTO memories(session_id, category, content, created_at, updated_at,"
            " mode, from_web) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (session_id, category, content, ts, ts, mode, int(from_web)),
        ).lastrowid
    (row,) = conn.execute("SELECT * FROM memories WHERE id = ?", (mid,)).fetchall()
    return row, match is not None


def _delete(conn: sqlite3.Connection, memory_id: int) -> sqlite3.Row:
    rows = conn.execute("SELECT * FROM memories WHERE id = ?", (memory_id,)).fetchall()
    if not rows:
        raise NotFound(f"no note #{memory_id}", field="id")
    conn.execute("DELETE FROM memories WHERE id = ?", (memory_id,))
    return rows[0]
