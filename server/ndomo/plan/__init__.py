"""Plan-store tools for the agents, `commit_plan`, and the plan-in-a-file translation."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ndomo.runtime.context import TurnContext
    from ndomo.runtime.plugins import Plugins
    from ndomo.runtime.tools import ToolDescriptor


def setup(plugins: Plugins) -> None:
    plugins.tools.later(_tools)
    plugins.on_file_written.add(plan_from_file)


def _tools() -> list[ToolDescriptor]:
    from ndomo.plan.tools import TOOLS

    return list(TOOLS)


async def plan_from_file(ctx: TurnContext, rel: str, text: str) -> str | None:
    """Plan-in-a-file (`plan.commit`), loaded with the first file a tool writes."""
    from ndomo.plan.commit import plan_from_file as commit

    return await commit(ctx, rel, text)
