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

from ndomo.runtime.tools import PathsUnknown, ToolDescriptor
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


def handoff(agent: str, what: str) -> str:
    return (
        f"{agent} plans; it does not change code ({what}). Put the change in a plan "
        "(plan_create + task_create_batch, or commit_plan) and hand off to the craftsman "
        "(`/agent craftsman`), which executes it task by task."
    )


class DesignWritesOnly:
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
            return handoff(agent, f"'{tool.name}' runs shell commands, which can change any file")
        if tool.risk != "write":
            return None
        globs = ctx.app.settings.modes.design_globs
        try:
            paths = tool.declared(params) or []
        except PathsUnknown:  # logged there; refused below
            paths = []
        if not paths:
            return handoff(agent, f"'{tool.name}' cannot show which files it writes")
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
            return handoff(agent, f"{', '.join(bad)} is not a design artifact ({', '.join(globs)})")
        return None
