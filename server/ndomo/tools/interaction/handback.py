"""The `handback` tool: the agent stops the turn because it needs the user."""

from __future__ import annotations

from pydantic import ConfigDict, Field

from ndomo.runtime.context import TurnContext
from ndomo.runtime.tools import ToolResult, tool
from ndomo.schema import Schema


class HandbackParams(Schema):
    model_config = ConfigDict(extra="forbid")
    # no field description: the tool's own says it (every request carries this schema)
    reason: str = Field(min_length=1)


@tool(
    "handback",
    HandbackParams,
    core=True,
    description="Stop: you are blocked and need the user.",
)
async def handback(ctx: TurnContext, p: HandbackParams) -> ToolResult:
    ctx.handback = p.reason
    return ToolResult(content=f"handed back to the user: {p.reason}", ends_turn=True)
