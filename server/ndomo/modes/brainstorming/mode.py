from __future__ import annotations

from ndomo.modes.base import AgentMode, ModeContract
from ndomo.runtime.context import TurnContext
from ndomo.runtime.prompts import ModePromptContributor

NAME = "brainstorming"


class Research(ModePromptContributor):
    name = "mode.brainstorming"
    mode = NAME
    priority = 50

    async def contribute(self, ctx: TurnContext) -> str | None:
        return (
            "Mode: BRAINSTORMING — find out, do not build.\n"
            "- Research with the code tools and `web_fetch`; compare options, name trade-offs.\n"
            "- Externalise every finding worth keeping with `remember` (fact, decision or preference):\n"
            "  notes survive the conversation, your context does not.\n"
            "- No shell. Edits only when the user asks for them."
        )


class BrainstormingMode(AgentMode):
    name = NAME
    contract = ModeContract(
        summary="Deep research: web, code tools and memory. Findings externalised to notes.",
        iteration_cap=16,
    )

    def prompt_contributors(self):
        return [Research()]
