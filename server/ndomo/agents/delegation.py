"""`task {agent, prompt}`: run a sub-agent as a nested turn and return its answer.

The policy has already checked the caller's `task` map (and asked if needed). The nested
turn runs in the caller's mode and session, recorded with the caller's turn as parent;
its permissions are the intersection with every ancestor's (see policy.effective_permission).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import ConfigDict, Field

from ndomo.runtime.tools import ToolResult, tool
from ndomo.schema import Schema

if TYPE_CHECKING:
    from ndomo.runtime.context import TurnContext

MAX_DEPTH = 3  # a nested turn's depth (the user's turn is 0)


class TaskParams(Schema):
    model_config = ConfigDict(extra="forbid")
    agent: str = Field(min_length=1, description="e.g. scout")
    prompt: str = Field(min_length=1, description="self-contained")


@tool(
    "task",
    TaskParams,
    description=("Delegate a job to a sub-agent; returns its answer."),
    permission="task",
)
async def task(ctx: TurnContext, p: TaskParams) -> ToolResult:
    from ndomo.runtime.context import TurnRequest

    rt = ctx.runtime
    if ctx.depth + 1 > MAX_DEPTH:
        return ToolResult.refused(
            f"delegation too deep: {p.agent} would run at depth {ctx.depth + 1} (max {MAX_DEPTH}); do the work yourself"
        )
    agents = await rt.agents()
    target = agents.get(p.agent)
    if target is None:
        subs = ", ".join(a.name for a in agents.subagents()) or "none"
        return ToolResult.failed(f"unknown agent '{p.agent}'; sub-agents: {subs}")
    if not target.is_subagent:
        return ToolResult.refused(
            f"'{p.agent}' is a primary agent, not a sub-agent; the user switches to it"
        )
    if p.agent == ctx.agent_name or any(a.agent_name == p.agent for a in _ancestors(ctx)):
        return ToolResult.refused(
            f"'{p.agent}' is already running in this chain of turns; no recursive delegation"
        )
    summary = await rt.run(TurnRequest(prompt=p.prompt, agent=p.agent), ctx.host, parent=ctx)
    data = {
        "agent": p.agent,
        "turn_id": summary.turn_id,
        "status": summary.status,
        "modified": summary.modified,
    }
    if summary.status == "failed":
        return ToolResult(
            ok=False,
            status="failed",
            data=data,
            content=f"{p.agent} failed: {summary.error or 'no answer'}",
        )
    text = summary.answer.strip() or "(no answer)"
    if summary.handback:
        text = (
            f"{p.agent} handed back: {summary.handback}\n{text}"
            if summary.answer.strip()
            else f"{p.agent} handed back: {summary.handback}"
        )
    if summary.status in ("capped", "cancelled"):
        text += f"\n[{p.agent} stopped: {summary.status}{' — ' + summary.error if summary.error else ''}]"
    if summary.modified:
        text += f"\n[files changed by {p.agent}: {', '.join(summary.modified)}]"
    return ToolResult(content=text, data=data)


def _ancestors(ctx: TurnContext):
    node = ctx.parent
    while node is not None:
        yield node
        node = node.parent
