"""Plan-store tools for the agents, `commit_plan`, and the plan-in-a-file translation."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ndomo.runtime.plugins import Plugins


def setup(plugins: Plugins) -> None:
    from ndomo.plan.commit import plan_from_file
    from ndomo.plan.tools import TOOLS

    for t in TOOLS:
        plugins.tools.add(t)
    plugins.on_file_written.add(plan_from_file)
