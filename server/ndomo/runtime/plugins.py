"""The registries a runtime is built from, and the one list of features that fill them.

Adding a mode, a tool set or a hook means a new folder plus one line in FEATURES; the
runtime's core never changes. A package outside ndomo adds its own the same way without
touching ndomo: an entry point in the `ndomo.features` group naming a module with
`setup(plugins)` (loaded after the built-ins, in name order).
"""

from __future__ import annotations

import importlib
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ndomo.listeners import Listeners
from ndomo.runtime.extensions import (
    FileWrittenListeners,
    OnRuntime,
    SessionEndListeners,
    file_write_failed,
)
from ndomo.runtime.hooks import HookRegistry
from ndomo.runtime.prompts import PromptManager
from ndomo.runtime.slash import SlashCommandRegistry
from ndomo.runtime.tools import ToolRegistry

if TYPE_CHECKING:
    from ndomo.modes.base import AgentMode

log = logging.getLogger("ndomo.plugins")

# Entry-point group of features from other packages (same `setup(plugins)` contract).
ENTRY_POINT_GROUP = "ndomo.features"

# Each module exposes `setup(plugins: Plugins) -> None`.
FEATURES: list[str] = [
    "ndomo.features.builtin",
    "ndomo.features.instructions",
    "ndomo.modes.discussion",
    "ndomo.modes.brainstorming",
    "ndomo.modes.autopilot",
    "ndomo.features.recovery",
    "ndomo.tools.shell",
    "ndomo.tools.web",
    "ndomo.tools.interaction",
    "ndomo.tools.reflexes",
    "ndomo.agents.feature",
    "ndomo.tools.files",
    "ndomo.tools.code",
    "ndomo.plan",
]


@dataclass
class Plugins:
    """The registries `setup(plugins)` fills; every extension point, with its signature,
    is listed in `ndomo.runtime.extensions`."""

    hooks: HookRegistry = field(default_factory=HookRegistry)
    tools: ToolRegistry = field(default_factory=ToolRegistry)
    prompts: PromptManager = field(default_factory=PromptManager)
    slash: SlashCommandRegistry = field(default_factory=SlashCommandRegistry)
    modes: dict[str, AgentMode] = field(default_factory=dict)
    # Called with each Runtime built from these plugins (to add listeners, start work …).
    on_runtime: list[OnRuntime] = field(default_factory=list)
    # Told of the runtime and the session it leaves (a new session started) — e.g. to
    # stop that session's servers.
    on_session_end: SessionEndListeners = field(default_factory=lambda: Listeners("session-end"))
    # Told of each file a tool wrote, in registration order; their answers are notes.
    on_file_written: FileWrittenListeners = field(
        default_factory=lambda: Listeners("file-written", failed=file_write_failed)
    )

    def add_mode(self, mode: AgentMode) -> None:
        if mode.name in self.modes:
            raise ValueError(f"mode {mode.name!r} registered twice")
        self.modes[mode.name] = mode
        mode.setup(self)


def installed_features() -> list[str]:
    """Modules named by the `ndomo.features` entry points of installed packages."""
    from importlib.metadata import entry_points

    found = sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ep.name)
    return [ep.value for ep in found if ep.value not in FEATURES]


def build_plugins(features: list[str] | None = None) -> Plugins:
    """The built-in FEATURES plus installed ones (or exactly `features`, for tests)."""
    plugins = Plugins()
    for mod in [*FEATURES, *installed_features()] if features is None else features:
        log.debug("feature %s", mod)
        importlib.import_module(mod).setup(plugins)
    return plugins
