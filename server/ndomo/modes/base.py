"""AgentMode: one mode = one folder that bundles its contract, tools, hooks and prompt."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ndomo.runtime.tools import BASE_KINDS, ToolKind, admitted

if TYPE_CHECKING:
    from ndomo.runtime.context import Engine, TurnContext
    from ndomo.runtime.hooks import HookBase
    from ndomo.runtime.prompts import PromptContributor
    from ndomo.runtime.slash import CommandSpec
    from ndomo.runtime.tools import ToolDescriptor, ToolGuard, ToolInfo


@dataclass(frozen=True)
class ModeContract:
    """What a mode promises, advertised to editors and read by the core instead of its name.

    role: what the mode is for, so a feature can pick "the research mode" without naming
    it: "plan", "research", "build" or None. requires_tools: the mode cannot work with a
    model that has no tool calling (the turn is refused instead of answered without tools).
    kinds: the tool classes the mode admits (`ToolDescriptor.tool_kind`: read, edit,
    execute, network, plan, interact, compose, commit); tools: single tools it admits by
    name besides. The registry's fence asks `admits`; no tool names a mode.
    """

    summary: str
    iteration_cap: int
    role: str | None = None
    requires_tools: bool = False
    kinds: frozenset[ToolKind] = BASE_KINDS
    tools: frozenset[str] = frozenset()

    def admits(self, tool: ToolInfo) -> bool:
        return admitted(tool, self.kinds, self.tools)


class AgentMode:
    name: str
    contract: ModeContract

    def iteration_cap(self, ctx: TurnContext) -> int:
        caps = ctx.app.settings.modes.iteration_caps
        return caps.get(self.name, self.contract.iteration_cap)

    def tools(self) -> list[ToolDescriptor]:
        return []

    def hooks(self) -> list[HookBase]:
        return []

    def prompt_contributors(self) -> list[PromptContributor]:
        return []

    def commands(self) -> list[CommandSpec]:
        return []

    def guards(self) -> list[ToolGuard]:
        return []

    async def on_stop(self, ctx: TurnContext, answer: str) -> str | None:
        """The model stopped (no tool calls) with `answer`: return a message to re-prompt it
        with, or None to end the turn (a mode may set ctx.status first)."""
        return None

    def on_runtime(self, runtime: Engine) -> None:
        """Called with each Runtime built from these plugins (to add event listeners …).
        `Plugins.add_mode` registers the rest of what a mode brings."""
