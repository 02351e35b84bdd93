"""The `remember` tool: a note (fact, decision, preference) that outlives the context window."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from ndomo.runtime.context import TurnContext
from ndomo.runtime.tools import ToolError, ToolResult, tool
from ndomo.schema import Schema
from ndomo.store.errors import Invalid


class RememberParams(Schema):
    model_config = ConfigDict(extra="forbid")
    content: str = Field(min_length=1, max_length=4000)
    category: Literal["fact", "decision", "preference"]


@tool(
    "remember",
    RememberParams,
    description="Save a note for later sessions.",
    risk="plan",
)
async def remember(ctx: TurnContext, p: RememberParams) -> ToolResult:
    store = await ctx.app.store()
    try:
        memory = await store.remember(ctx.session.id, p.category, p.content)
    except Invalid as exc:
        raise ToolError(str(exc)) from None
    text = f"merged with note #{memory.id}" if memory.merged else f"saved #{memory.id}"
    return ToolResult(
        content=f"{text} ({memory.category})", data={"id": memory.id, "merged": memory.merged}
    )
