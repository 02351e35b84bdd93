"""The notes agents remembered (`remember`), for the user to list and delete: `memory.list`
and `memory.delete` (LSP command, CLI subcommand, slash command)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import ConfigDict, Field

from ndomo.actions import action, store_of
from ndomo.schema import Schema
from ndomo.store.models import Memory, MemoryCategory

if TYPE_CHECKING:
    from ndomo.app import App


class MemoryListParams(Schema):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)
    category: MemoryCategory | None = Field(
        default=None, description="fact, decision or preference"
    )
    query: str | None = Field(
        default=None, description="Only notes with these words (best match first)."
    )
    limit: int = Field(default=100, ge=1, le=1000, description="At most this many notes.")


class MemoryDeleteParams(Schema):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)
    id: int = Field(ge=1, description="The note's number (#id in `memory list`).")


def _render_memories(rows: list) -> str:
    if not rows:
        return "no notes"
    return "\n".join(f"#{m['id']} [{m['category']}] {' '.join(m['content'].split())}" for m in rows)


@action(
    "memory.list",
    MemoryListParams,
    summary="List the notes agents remembered (newest first)",
    render=_render_memories,
    read_only=True,
)
async def memory_list(app: App, p: MemoryListParams) -> list[Memory]:
    async with store_of(app) as s:
        if p.query:
            return await s.search_memories(p.query, p.limit, category=p.category, any_word=True)
        return await s.list_memories(p.category, p.limit)


@action("memory.delete", MemoryDeleteParams, summary="Delete one note")
async def memory_delete(app: App, p: MemoryDeleteParams) -> Memory:
    async with store_of(app) as s:
        return await s.delete_memory(p.id)
