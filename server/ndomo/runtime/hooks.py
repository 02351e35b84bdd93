"""Phases and hooks: the fixed skeleton of a turn and its pluggable mounting points.

Adding a feature means adding a hook, never editing `Runtime.run`. Within a phase hooks
run by `priority` (lower first), then by name; a hook that must follow another's work
takes a higher number (the task binding, 20, reads the turn record's id, 10).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ndomo.runtime.context import TurnContext

log = logging.getLogger("ndomo.runtime")


class Phase(StrEnum):
    PRE_DISPATCH = "pre_dispatch"
    PRE_AGENT_BUILD = "pre_agent_build"
    POST_AGENT_BUILD = "post_agent_build"
    PRE_EXECUTE = "pre_execute"
    POST_RESPONSE = "post_response"
    FINALLY = "finally"


class HookAction(StrEnum):
    CONTINUE = "continue"
    SHORT_CIRCUIT = "short_circuit"  # end the request now with `payload`
    SKIP_AGENT = "skip_agent"  # no build/execute; POST_RESPONSE and FINALLY still run


@dataclass(frozen=True)
class HookResult:
    action: HookAction = HookAction.CONTINUE
    payload: Any = None


CONTINUE = HookResult()


class DuplicateHookError(RuntimeError):
    pass


class HookBase:
    phase: Phase
    name: str
    priority: int = 100  # lower runs earlier; equal priorities run by name

    def applies(self, ctx: TurnContext) -> bool:
        return True

    async def run(self, ctx: TurnContext) -> HookResult | None:  # pragma: no cover - interface
        raise NotImplementedError


class LifecycleHook(HookBase):
    """Runs on every request that reaches its phase."""


class ModeGatedHook(HookBase):
    """Runs only while its mode is the turn's mode: no hook forgets the check."""

    mode: str

    def applies(self, ctx: TurnContext) -> bool:
        return ctx.mode == self.mode


class HookRegistry:
    def __init__(self) -> None:
        self._hooks: dict[Phase, list[HookBase]] = {p: [] for p in Phase}

    def add(self, hook: HookBase) -> None:
        bucket = self._hooks[hook.phase]
        if any(h.name == hook.name for h in bucket):
            raise DuplicateHookError(
                f"hook {hook.name!r} registered twice in phase {hook.phase.value}"
            )
        bucket.append(hook)
        bucket.sort(key=lambda h: (h.priority, h.name))

    def extend(self, hooks: Iterable[HookBase]) -> None:
        for h in hooks:
            self.add(h)

    def ordered(self, phase: Phase) -> list[HookBase]:
        """The phase's hooks in the order they run."""
        return self._hooks[phase]

    async def run_phase(self, phase: Phase, ctx: TurnContext) -> HookResult:
        for hook in self.ordered(phase):
            if not hook.applies(ctx):
                continue
            result = await hook.run(ctx)
            if result is not None and result.action is not HookAction.CONTINUE:
                return result
        return CONTINUE
