"""Brainstorming: deep research (web, code tools, memory); findings go to notes."""

from ndomo.modes.brainstorming.mode import BrainstormingMode
from ndomo.runtime.plugins import Plugins


def setup(plugins: Plugins) -> None:
    plugins.add_mode(BrainstormingMode())
