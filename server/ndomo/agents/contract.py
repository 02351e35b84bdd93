"""Agent contracts from frontmatter fields, enforced in code rather than by agent name.

`writes: design` makes an agent a planner: in every mode it may change design artifacts
(the discussion-mode globs, judged on the real path of a file) and plans (through the plan
tools) and nothing else — no code edits, no shell. A delegated sub-agent inherits the
contract of any ancestor that has it, so a planner cannot have code written for it.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from pydantic import BaseModel

from ndomo.runtime.plugins import Plugins
from ndomo.runtime.tools import (
    PathsUnknown,
    PlanStep,
    ToolDescriptor,
    ToolError,
    ToolGuard,
    ToolKind,
)
from ndomo.security.control import control_kind, design_artifact, real_target

if TYPE_CHECKING:
    from ndomo.runtime.context import TurnContext

log = logging.getLogger("ndomo.agents")


def design_writer(ctx: TurnContext | None) -> str | None:
    """The name of the nearest agent (this turn or a delegating one) with `writes: design`."""
    while ctx is not None:
        if ctx.agent is not None and ctx.agent.writes == "design":
            return ctx.agent_name
        ctx = ctx.parent
    return None


async def agent_for(ctx: TurnContext, role: str) -> str | None:
    """The first agent a user can switch to whose contract gives it `role` ("planner":
    `writes: design`; "builder": a `threshold`), so messages name no agent themselves."""
    agents = await ctx.runtime.agents()
    return next((a.name for a in agents.primaries() if a.role == role), None)


def tools_named(
    ctx: TurnContext, step: PlanStep | None = None, kind: ToolKind | None = None
) -> str:
    """The tools that declare a plan step (or a class), for messages that name no tool."""
    names = [
        t.name
        for t in Plugins.of(ctx).tools.all()
        if (step is not None and t.plan_step == step) or (kind is not None and t.tool_kind == kind)
    ]
    return " or ".join(names) or "the plan tools"


async def handoff(ctx: TurnContext, agent: str, what: str) -> str:
    ways = f"{tools_named(ctx, 'drafts_plan')} + {tools_named(ctx, 'adds_tasks')}"
    commit = tools_named(ctx, kind="commit")
    builder = await agent_for(ctx, "builder")
    to = f"hand off to the {builder} (`/agent {builder}`)" if builder else "hand it to a builder"
    return (
        f"{agent} plans; it does not change code ({what}). Put the change in a plan "
        f"({ways}, or {commit}) and {to}, which executes it task by task."
    )


class DesignWritesOnly(ToolGuard):
    """Refuses a `writes: design` agent any change that is not a design artifact or a plan."""

    name = "design_writes_only"

    async def check(self, ctx: TurnContext, tool: ToolDescriptor, params: BaseModel) -> str | None:
        agent = design_writer(ctx)
        if agent is None:
            return None
        if tool.permission == "bash":
            from .policy import effective_permission, is_flat_deny

            if is_flat_deny(effective_permission(ctx), "bash"):
                return None  # the permission policy refuses it, saying so
            return await handoff(
                ctx, agent, f"'{tool.name}' runs shell commands, which can change any file"
            )
        if tool.risk != "write":
            return None
        globs = ctx.app.settings.modes.design_globs
        try:
            paths = await tool.paths(ctx, params) or []
        except (PathsUnknown, ToolError):  # logged there; refused below
            paths = []
        if not paths:
            return await handoff(ctx, agent, f"'{tool.name}' cannot show which files it writes")
        bad = []
        for raw in paths:
            real = await asyncio.to_thread(real_target, raw, ctx.roots)
            if real is None:
                continue  # the tool refuses it, saying why
            rel, folder = real
            if control_kind(rel) in ("instructions", "agent_config"):
                continue  # the permission policy asks the user
            if folder or not design_artifact(rel, globs):
                bad.append(rel)
        if bad:
            return await handoff(
                ctx, agent, f"{', '.join(bad)} is not a design artifact ({', '.join(globs)})"
            )
        return None
