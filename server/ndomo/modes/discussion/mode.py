from __future__ import annotations

import asyncio
import logging

from pydantic import BaseModel

from ndomo.modes.base import AgentMode, ModeContract
from ndomo.runtime.context import TurnContext
from ndomo.runtime.hooks import HookResult, ModeGatedHook, Phase
from ndomo.runtime.prompts import ModePromptContributor
from ndomo.runtime.tools import BASE_KINDS, PathsUnknown, ToolDescriptor, ToolError, ToolGuard
from ndomo.security.control import control_kind, design_artifact, real_target

log = logging.getLogger("ndomo.modes")

NAME = "discussion"


class DesignArtifactsOnly(ToolGuard):
    """Discussion may write, but only design artifacts: files matching the design globs,
    judged on their resolved real path; `.ndomo/` and `.git/` never count. Project
    instruction and agent files pass on to the permission policy, which always asks."""

    name = "design_artifacts_only"

    async def check(self, ctx: TurnContext, tool: ToolDescriptor, params: BaseModel) -> str | None:
        if ctx.mode != NAME or tool.risk != "write":
            return None
        globs = ctx.app.settings.modes.design_globs
        try:
            paths = await tool.paths(ctx, params)
        except (PathsUnknown, ToolError):  # logged there; refused below
            paths = None
        if not paths:
            return (
                f"'{tool.name}' cannot show which files it writes; "
                f"discussion mode writes only design artifacts ({', '.join(globs)})"
            )
        bad = []
        for raw in paths:
            real = await asyncio.to_thread(real_target, str(raw), ctx.roots)
            if real is None:
                continue  # the tool refuses it with the reason
            rel, folder = real
            if control_kind(rel) in ("instructions", "agent_config"):
                continue  # the policy asks the user, with a warning
            if folder or not design_artifact(rel, globs):
                bad.append(rel if rel == str(raw) else f"{raw} (really {rel})")
        if bad:
            return (
                f"discussion mode writes only design artifacts ({', '.join(globs)}; never .ndomo/ or .git/); "
                f"{', '.join(bad)} is not one — switch to autopilot"
            )
        return None


class Concise(ModePromptContributor):
    name = "mode.discussion"
    mode = NAME
    priority = 50

    async def contribute(self, ctx: TurnContext) -> str | None:
        cap = ctx.app.settings.modes.discussion_prose_cap
        return (
            f"Mode: DISCUSSION — decide, don't implement. Ultra-concise: ≤{cap} chars, bullets. Write only "
            "design artifacts (markdown, docs/). Plan clear → `commit_plan` (title + ≤5 steps with files)."
        )

    async def compact(self, ctx: TurnContext) -> str | None:
        return "Mode: DISCUSSION — decide, don't implement; be brief; `commit_plan` when clear."


class ProseCap(ModeGatedHook):
    """Keep discussion answers short even when the model is not; the transcript keeps all."""

    phase = Phase.POST_RESPONSE
    name = "discussion.prose_cap"
    mode = NAME

    async def run(self, ctx: TurnContext) -> HookResult | None:
        cap = ctx.app.settings.modes.discussion_prose_cap
        if len(ctx.answer) > cap:
            ctx.answer = (
                ctx.answer[:cap].rstrip()
                + f"\n\n[trimmed to the discussion prose cap of {cap} characters; the transcript has the rest]"
            )
        return None


class DiscussionMode(AgentMode):
    name = NAME
    contract = ModeContract(
        summary="Ultra-concise planning. Writes limited to design artifacts. Crystallises into a committed plan.",
        iteration_cap=8,
        role="plan",
        kinds=BASE_KINDS | {"commit"},
    )

    def guards(self):
        return [DesignArtifactsOnly()]

    def prompt_contributors(self):
        return [Concise()]

    def hooks(self):
        return [ProseCap()]
