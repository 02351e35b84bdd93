from __future__ import annotations

from ndomo.modes.base import AgentMode, ModeContract
from ndomo.runtime.context import TurnContext
from ndomo.runtime.prompts import ModePromptContributor
from ndomo.runtime.tools import BASE_KINDS

NAME = "brainstorming"


class Research(ModePromptContributor):
    name = "mode.brainstorming"
    mode = NAME
    priority = 50

    async def contribute(self, ctx: TurnContext) -> str | None:
        return (
            "Mode: BRAINSTORMING — find out, don't build. Research with the code tools and `web_fetch`; compare "
            "options, name trade-offs. Save every finding worth keeping with `remember`: notes outlive your "
            "context. Edits only when asked."
        )

    async def compact(self, ctx: TurnContext) -> str | None:
        return "Mode: BRAINSTORMING — research; `remember` findings."


class BrainstormingMode(AgentMode):
    name = NAME
    contract = ModeContract(
        summary="Deep research: web, code tools and memory. Findings externalised to notes.",
        iteration_cap=16,
        role="research",
        kinds=BASE_KINDS | {"network"},
    )

    def prompt_contributors(self):
        return [Research()]
