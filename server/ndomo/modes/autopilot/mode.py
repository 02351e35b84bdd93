from __future__ import annotations

import logging

from ndomo.modes.autopilot import stops
from ndomo.modes.base import AgentMode, ModeContract
from ndomo.runtime.context import Engine, TurnContext
from ndomo.runtime.hooks import HookResult, ModeGatedHook, Phase
from ndomo.runtime.prompts import ModePromptContributor, add_to_prompt
from ndomo.runtime.tools import BASE_KINDS
from ndomo.store.errors import StoreError

NAME = "autopilot"
log = logging.getLogger("ndomo.modes")


class Autonomy(ModePromptContributor):
    name = "mode.autopilot"
    mode = NAME
    priority = 50

    async def contribute(self, ctx: TurnContext) -> str | None:
        return (
            "Mode: AUTOPILOT — full autonomy. Plan briefly, act, verify (run the tests), re-plan when a step "
            "fails. Don't ask what you can find out; `handback` only when truly blocked."
        )

    async def compact(self, ctx: TurnContext) -> str | None:
        return "Mode: AUTOPILOT — act, verify, re-plan; `handback` only when blocked."


class PlanGuidance(ModeGatedHook):
    """Inject the session's committed plan: the agent follows its intent but adapts freely."""

    phase = Phase.POST_AGENT_BUILD
    name = "autopilot.plan_guidance"
    mode = NAME

    async def run(self, ctx: TurnContext) -> HookResult | None:
        plan_id = ctx.session.committed_plan_id
        if not plan_id:
            return None
        try:
            store = await ctx.app.store()
            detail = await store.get_plan(plan_id)
        except StoreError as exc:
            log.warning("committed plan %s is gone (%s); no guidance injected", plan_id, exc)
            return None
        add_to_prompt(ctx, render_guidance(detail))  # per turn: the system prompt stays cacheable
        return None


def render_guidance(plan) -> str:
    """The plan as a short system message (PlanDetail: the plan with its tasks)."""
    lines = [
        f"Committed plan (guidance — follow its intent, adapt freely): {plan.title} [{plan.slug}]"
    ]
    if plan.overview:
        lines.append(f"Overview: {plan.overview}")
    if getattr(plan, "approach", None):
        lines.append(f"Approach: {plan.approach}")
    for i, t in enumerate(plan.tasks, 1):
        files = f" ({', '.join(t.files)})" if t.files else ""
        lines.append(f"{i}. [{t.status}] {t.description}{files}")
    return "\n".join(lines)


class AutopilotMode(AgentMode):
    name = NAME
    contract = ModeContract(
        summary="Full autonomy end to end. Re-plans on failure. Hands back only when truly blocked.",
        iteration_cap=40,
        role="build",
        kinds=BASE_KINDS | {"execute", "external"},
        requires_tools=True,
    )

    def prompt_contributors(self):
        return [Autonomy()]

    def hooks(self):
        return [PlanGuidance()]

    async def on_stop(self, ctx: TurnContext, answer: str) -> str | None:
        return await stops.on_stop(ctx, answer)

    def on_runtime(self, runtime: Engine) -> None:
        runtime.event_listeners.add(stops.track_plans)
