"""The `remember` tool: a note (fact, decision, preference) that outlives the context window."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from ndomo.runtime.context import TurnContext
from ndomo.runtime.tools import ToolError, ToolRegistry, ToolResult, tool
from ndomo.schema import Schema
from ndomo.store.errors import Invalid


class RememberParams(Schema):
    model_config = ConfigDict(extra="forbid")
    content: str = Field(min_length=1, max_length=4000)
    category: Literal["fact", "decision", "preference"]


def read_web(ctx: TurnContext) -> bool:
    """The model's context holds web content: a result of a network tool (web_fetch …).

    A note saved then may carry a page's words as if they were the user's; it is marked,
    quoted with that origin when recalled, and never recalled into autopilot on its own.
    """
    tools = ctx.runtime.part(ToolRegistry)
    for m in ctx.messages:
        if m.role == "tool" and m.name:
            found = tools.lookup(ctx, m.name)
            if found is not None and found.risk == "network":
                return True
    return False


@tool(
    "remember",
    RememberParams,
    description="Save a note for later sessions.",
    risk="plan",
)
async def remember(ctx: TurnContext, p: RememberParams) -> ToolResult:
    store = await ctx.app.store()
    try:
        memory = await store.remember(
            ctx.session.id, p.category, p.content, mode=ctx.mode, from_web=read_web(ctx)
        )
    except Invalid as exc:
        raise ToolError(str(exc)) from None
    text = f"merged with note #{memory.id}" if memory.merged else f"saved #{memory.id}"
    return ToolResult(
        content=f"{text} ({memory.category})", data={"id": memory.id, "merged": memory.merged}
    )
