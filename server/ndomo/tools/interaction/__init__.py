"""Interaction tools available in every mode: `ask_user`, `handback`, `remember` and `recall`
(plus the notes recalled into each prompt)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ndomo.tools.interaction.recall import RecallNotesHook, recall_prefetch

if TYPE_CHECKING:
    from ndomo.runtime.plugins import Plugins
    from ndomo.runtime.tools import ToolDescriptor


def setup(plugins: Plugins) -> None:
    plugins.tools.later(_tools)
    plugins.hooks.extend([recall_prefetch(), RecallNotesHook()])


def _tools() -> list[ToolDescriptor]:
    from ndomo.tools.interaction.ask_user import ask_user
    from ndomo.tools.interaction.handback import handback
    from ndomo.tools.interaction.recall import recall
    from ndomo.tools.interaction.remember import remember

    return [ask_user, handback, remember, recall]
