"""The workspace's reflexes as tools: a per-app catalog refreshed (off the loop) before each
turn is built, read synchronously by a registry tool provider."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ndomo.runtime import prefetch
from ndomo.runtime.context import TurnContext
from ndomo.runtime.hooks import HookResult, LifecycleHook, Phase
from ndomo.runtime.tools import ToolDescriptor, ToolResult
from ndomo.tools.reflexes.files import signature

if TYPE_CHECKING:
    from ndomo.app import App
    from ndomo.tools.reflexes.model import Reflex, ReflexProblem


def describe(reflex: Reflex) -> str:
    steps = ", ".join(s.tool for s in reflex.steps)
    head = reflex.description.strip() or f"Workspace reflex '{reflex.name}'."
    return f"{head} (reflex from {reflex.source}; steps: {steps}; each step obeys the current mode)"


def descriptor(reflex: Reflex) -> ToolDescriptor:
    from ndomo.tools.reflexes.runner import params_model, run_reflex

    async def run(ctx: TurnContext, params) -> ToolResult:
        result = await run_reflex(ctx, reflex, params.model_dump())
        status = "done" if result.ok else (result.steps[-1].status if result.steps else "failed")
        if status == "done" and not result.ok:
            status = "failed"
        return ToolResult(
            ok=result.ok,
            content=result.render(),
            status=status,  # type: ignore[arg-type]  # the reflex statuses are a subset of ToolResult's
            data=result.model_dump(),
        )

    return ToolDescriptor(
        name=reflex.tool_name,
        description=describe(reflex),
        params=params_model(reflex),
        run=run,
        kind="compose",  # runs other tools, each step through the fence
        risk="exec",
        permission=None,
    )


@dataclass
class ReflexCatalog:
    root: Path
    # False in a folder the user has not trusted: its reflexes are not loaded
    enabled: bool = True
    reflexes: list[Reflex] = field(default_factory=list)
    problems: list[ReflexProblem] = field(default_factory=list)
    descriptors: list[ToolDescriptor] = field(default_factory=list)
    _sig: tuple | None = None
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def refresh(self) -> ReflexCatalog:
        if not self.enabled:
            return self
        async with self._lock:
            sig = await asyncio.to_thread(signature, self.root)
            if sig != self._sig:
                # the parser, the models and the runner load with a first reflex file (in
                # the thread, with the descriptors' parameter models), not in every turn
                self.reflexes, self.problems, self.descriptors = (
                    await asyncio.to_thread(_load, self.root) if sig else ([], [], [])
                )
                self._sig = sig
        return self

    def get(self, name: str) -> Reflex | None:
        name = name.removeprefix("reflex_")
        return next((r for r in self.reflexes if r.name == name), None)


def _load(root: Path) -> tuple[list[Reflex], list[ReflexProblem], list[ToolDescriptor]]:
    from ndomo.tools.reflexes.loader import load_reflexes

    reflexes, problems = load_reflexes(root)
    return reflexes, problems, [descriptor(r) for r in reflexes]


def catalog_for(app: App) -> ReflexCatalog:
    return app.instance(ReflexCatalog, lambda: ReflexCatalog(app.root, app.trust.trusted))


def provide(ctx: TurnContext) -> list[ToolDescriptor]:
    cat = ctx.app.existing(ReflexCatalog)
    return list(cat.descriptors) if cat is not None else []


class RefreshReflexes(LifecycleHook):
    """Picks up added or edited reflex files before the turn's tools are chosen."""

    phase = Phase.PRE_AGENT_BUILD
    name = "reflexes.refresh"
    priority = 20

    async def run(self, ctx: TurnContext) -> HookResult | None:
        await prefetch.take(ctx, PREFETCH_KEY, _refresh)  # started at the turn's start
        return None


PREFETCH_KEY = "reflexes.refresh"


async def _refresh(ctx: TurnContext) -> ReflexCatalog:
    return await catalog_for(ctx.app).refresh()


def prefetch_hook() -> prefetch.Prefetch:
    """Checks the reflex files' stamps (a thread hop) while the turn's rows are written."""
    return prefetch.Prefetch("reflexes.prefetch", PREFETCH_KEY, _refresh)
