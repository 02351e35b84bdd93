"""Phases and hooks: the fixed skeleton of a turn and its pluggable mounting points.

Adding a feature means adding a hook, never editing `Runtime.run`.
"""

from __future__ import annotations

import heapq
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
    POST_DISPATCH = "post_dispatch"
    PRE_AGENT_BUILD = "pre_agent_build"
    POST_AGENT_BUILD = "post_agent_build"
    PRE_EXECUTE = "pre_execute"
    POST_RESPONSE = "post_response"
    ON_ERROR = "on_error"
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


class HookCycleError(RuntimeError):
    pass


class DuplicateHookError(RuntimeError):
    pass


class HookBase:
    phase: Phase
    name: str
    priority: int = 100  # lower runs earlier among unconstrained hooks
    before: tuple[str, ...] = ()
    after: tuple[str, ...] = ()

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
        self._hooks: dict[Phase, dict[str, HookBase]] = {p: {} for p in Phase}
        self._order: dict[Phase, list[HookBase]] = {}

    def add(self, hook: HookBase) -> None:
        bucket = self._hooks[hook.phase]
        if hook.name in bucket:
            raise DuplicateHookError(
                f"hook {hook.name!r} registered twice in phase {hook.phase.value}"
            )
        bucket[hook.name] = hook
        self._order.pop(hook.phase, None)

    def extend(self, hooks: Iterable[HookBase]) -> None:
        for h in hooks:
            self.add(h)

    def ordered(self, phase: Phase) -> list[HookBase]:
        if phase not in self._order:
            self._order[phase] = self._sort(phase)
        return self._order[phase]

    def validate(self) -> None:
        """Sort every phase now, so a cycle fails at start-up rather than mid-turn."""
        for phase in Phase:
            self.ordered(phase)

    def _sort(self, phase: Phase) -> list[HookBase]:
        hooks = self._hooks[phase]
        edges: dict[str, set[str]] = {n: set() for n in hooks}
        indeg = {n: 0 for n in hooks}
        for h in hooks.values():
            for other in h.before:
                if other in hooks and other not in edges[h.name]:
                    edges[h.name].add(other)
                    indeg[other] += 1
            for other in h.after:
                if other in hooks and h.name not in edges[other]:
                    edges[other].add(h.name)
                    indeg[h.name] += 1
        ready = [(hooks[n].priority, n) for n, d in indeg.items() if d == 0]
        heapq.heapify(ready)
        out: list[HookBase] = []
        while ready:
            _, n = heapq.heappop(ready)
            out.append(hooks[n])
            for m in sorted(edges[n]):
                indeg[m] -= 1
                if indeg[m] == 0:
                    heapq.heappush(ready, (hooks[m].priority, m))
        if len(out) != len(hooks):
            stuck = sorted(n for n, d in indeg.items() if d > 0)
            raise HookCycleError(f"hook order cycle in phase {phase.value}: {', '.join(stuck)}")
        return out

    async def run_phase(self, phase: Phase, ctx: TurnContext) -> HookResult:
        for hook in self.ordered(phase):
            if not hook.applies(ctx):
                continue
            result = await hook.run(ctx)
            if result is not None and result.action is not HookAction.CONTINUE:
                return result
        return CONTINUE
