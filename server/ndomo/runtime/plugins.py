"""The registries a runtime is built from, and the one list of features that fill them.

Adding a mode, a tool set or a hook means a new folder plus one line in FEATURES; the
runtime's core never changes.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ndomo.runtime.hooks import HookRegistry
from ndomo.runtime.prompts import PromptManager
from ndomo.runtime.slash import SlashCommandRegistry
from ndomo.runtime.tools import ToolRegistry

if TYPE_CHECKING:
    from ndomo.modes.base import AgentMode
    from ndomo.runtime.runtime import Runtime

# Each module exposes `setup(plugins: Plugins) -> None`.
FEATURES: list[str] = [
    "ndomo.runtime.builtin",
    "ndomo.runtime.instructions",
    "ndomo.modes.discussion",
    "ndomo.modes.brainstorming",
    "ndomo.modes.autopilot",
    "ndomo.runtime.recovery",
    "ndomo.tools.shell",
    "ndomo.tools.web",
    "ndomo.tools.interaction",
    "ndomo.tools.reflexes",
    "ndomo.agents.feature",
    "ndomo.tools.files",
    "ndomo.tools.codetools",
    "ndomo.tools.plans",
]


@dataclass
class Plugins:
    hooks: HookRegistry = field(default_factory=HookRegistry)
    tools: ToolRegistry = field(default_factory=ToolRegistry)
    prompts: PromptManager = field(default_factory=PromptManager)
    slash: SlashCommandRegistry = field(default_factory=SlashCommandRegistry)
    modes: dict[str, AgentMode] = field(default_factory=dict)
    # Called with each Runtime built from these plugins (to add listeners, services …).
    on_runtime: list[Callable[[Runtime], None]] = field(default_factory=list)
    # Called with the session a runtime leaves (a new session started) — e.g. to stop its servers.
    on_session_end: list[Callable[[str], Awaitable[None]]] = field(default_factory=list)

    def add_mode(self, mode: AgentMode) -> None:
        if mode.name in self.modes:
            raise ValueError(f"mode {mode.name!r} registered twice")
        self.modes[mode.name] = mode
        mode.setup(self)


def build_plugins(features: list[str] | None = None) -> Plugins:
    plugins = Plugins()
    for mod in FEATURES if features is None else features:
        importlib.import_module(mod).setup(plugins)
    plugins.hooks.validate()  # a cycle is a start-up error, not a mid-turn surprise
    return plugins
