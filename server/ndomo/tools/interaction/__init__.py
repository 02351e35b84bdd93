"""Interaction tools available in every mode: `ask_user`, `handback`, `remember` and `recall`
(plus the notes recalled into each prompt)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ndomo.tools.interaction.ask_user import ask_user
from ndomo.tools.interaction.handback import handback
from ndomo.tools.interaction.recall import RecallNotesHook, recall, recall_prefetch
from ndomo.tools.interaction.remember import remember

if TYPE_CHECKING:
    from ndomo.runtime.plugins import Plugins


def setup(plugins: Plugins) -> None:
    plugins.tools.add(ask_user)
    plugins.tools.add(handback)
    plugins.tools.add(remember)
    plugins.tools.add(recall)
    plugins.hooks.extend([recall_prefetch(), RecallNotesHook()])
