"""The registries a runtime is built from, filled by features' `setup(plugins)`.

Which features fill them is decided above the engine, by the composition root
(`ndomo.compose.plugins`: the built-in features, then the `ndomo.features` entry points of
installed packages). The engine only runs the setups it is given (`build_plugins`) and
keeps the root's choice as the default for a runtime built without plugins
(`default_plugins`); it never names a feature.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
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
    from ndomo.runtime.context import TurnContext

log = logging.getLogger("ndomo.plugins")


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

    @classmethod
    def of(cls, ctx: TurnContext) -> Plugins:
        """The registries of the runtime running `ctx`."""
        return ctx.runtime.part(cls)

    def add_mode(self, mode: AgentMode) -> None:
        """Register `mode` with everything it brings: its tools, hooks, prompt contributors,
        slash commands and guards."""
        if mode.name in self.modes:
            raise ValueError(f"mode {mode.name!r} registered twice")
        self.modes[mode.name] = mode
        self.tools.fences[mode.name] = mode.contract
        for t in mode.tools():
            self.tools.add(t)
        self.hooks.extend(mode.hooks())
        for c in mode.prompt_contributors():
            self.prompts.add(c)
        for s in mode.commands():
            self.slash.add(s)
        self.tools.guards.extend(mode.guards())
        self.on_runtime.append(mode.on_runtime)


# A feature: the `setup(plugins)` of a module (or of a package outside ndomo).
Setup = Callable[[Plugins], None]

# The composition root's feature set (`use_default`): what `Runtime(app)` gets without plugins.
_default: Callable[[], Plugins] | None = None


def build_plugins(setups: Iterable[Setup]) -> Plugins:
    """Registries filled by `setups`, in order."""
    from ndomo.runtime import schema_cache

    plugins = Plugins()
    for setup in setups:
        log.debug("feature %s", getattr(setup, "__module__", setup))
        setup(plugins)
    schema_cache.save()  # the manifests of tools loaded now (`ToolRegistry.later`), once
    return plugins


def use_default(make: Callable[[], Plugins]) -> None:
    """Set how a runtime built without plugins gets them (called by the composition root)."""
    global _default
    _default = make


def default_plugins() -> Plugins:
    """The composition root's features; an error naming the root when none was set."""
    if _default is None:
        raise LookupError(
            "no features wired: build the plugins with ndomo.compose.plugins() "
            "(a front end started through ndomo.compose sets them)"
        )
    return _default()
