"""Autopilot's "hand back only when blocked", in code: a plain stop is not the end.

When the model stops without a final answer, or with tasks of its plan still pending and
no hand-back, the executor re-prompts it (at most MAX_NUDGES times, and never past the
mode's iteration cap) to go on, re-plan or hand back. After a re-prompt, an answer with
text is the model saying why it stops, and the turn is done; stopping silently again ends
the turn `blocked`, never `done`.

The plans a turn works on: the session's committed plan and every plan its tool calls
changed (`plan_changed` events). A turn started on one task (`task_id`) is not held to the
rest of that task's plan, and the task itself is closed by the turn's end.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ndomo.store.errors import NotFound

if TYPE_CHECKING:
    from ndomo.runtime.context import TurnContext
    from ndomo.runtime.events import TurnEvent

log = logging.getLogger("ndomo.modes")

MAX_NUDGES = 2
OPEN = ("pending", "running")


@dataclass
class _Stops:
    """Per turn: the plans its tools changed and how often it was asked to go on."""

    plans: set[str] = field(default_factory=set)
    nudges: int = 0


def _top(ctx: TurnContext) -> TurnContext:
    while ctx.parent is not None:
        ctx = ctx.parent
    return ctx


async def track_plans(ctx: TurnContext, event: TurnEvent) -> None:
    """Remember every plan a turn's tools changed (sub-agents' changes count for the turn)."""
    plan_id = getattr(event, "plan_id", None)
    if event.kind == "plan_changed" and plan_id:
        _top(ctx).instance(_Stops, _Stops).plans.add(plan_id)


async def _open_tasks(ctx: TurnContext) -> list[tuple[Any, list[Any]]]:
    """(plan, its tasks not done) for each plan this turn works on that still has some."""
    ids: set[str] = set(ctx.instance(_Stops, _Stops).plans)
    if ctx.session.committed_plan_id:
        ids.add(ctx.session.committed_plan_id)
    store = await ctx.app.store()
    bound = None  # a turn started on one task works on that task, not on the rest of its plan,
    if ctx.request.task_id:  # and the turn's end closes that task (agents/feature.py)
        try:
            bound = int(ctx.request.task_id.lstrip("#"))
        except ValueError:
            bound = None
    if bound is not None:
        return []
    out = []
    for pid in sorted(ids):
        try:
            plan = await store.get_plan(pid)
        except NotFound:  # deleted meanwhile
            continue
        if plan.status in ("abandoned", "completed", "failed"):
            continue
        left = [t for t in plan.tasks if t.status in OPEN]
        if left:
            out.append((plan, left))
    return out


async def on_stop(ctx: TurnContext, answer: str) -> str | None:
    if ctx.depth > 0 or ctx.handback is not None:
        return None  # a sub-agent answers its caller; a hand-back already said why
    stops = ctx.instance(_Stops, _Stops)
    nudges = stops.nudges
    said = bool(answer.strip())
    if nudges and said:
        return None  # asked to go on, it answered: that answer is its reason for stopping
    open_tasks = await _open_tasks(ctx)
    if said and not open_tasks:
        return None
    if nudges >= MAX_NUDGES:
        ctx.status = "blocked"
        ctx.handback = (
            "the model stopped "
            + ("with plan tasks still pending " if open_tasks else "")
            + f"without a final answer or a hand-back, {nudges} times"
        )
        return None
    stops.nudges = nudges + 1
    if open_tasks:
        lines = ["Autopilot: you stopped, but your plan is not finished:"]
        for plan, left in open_tasks:
            lines.append(f"Plan {plan.slug} ({plan.title}):")
            lines += [
                f"- task #{t.id} [{t.status}] {' '.join(t.description.split())}" for t in left
            ]
        lines.append(
            "Continue with these tasks (mark each with task_update_status), re-plan if a step failed, "
            "or call `handback` with the reason you are blocked. If they should not be done, say why."
        )
        return "\n".join(lines)
    return (
        "Autopilot: you stopped without a final answer. Continue the work, give your final answer "
        "(what you did and how it was verified), or call `handback` with the reason you are blocked."
    )
