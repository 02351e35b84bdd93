"""Crystallise steps into a plan + tasks and make it the session's committed plan.

One code path for `commit_plan` and for plan-in-a-file, so both produce the same rows
and the same disclosure.
"""

from __future__ import annotations

import logging
from typing import Literal

from pydantic import ConfigDict, Field, model_validator

from ndomo.agents.routing import make_router
from ndomo.plan.markdown import ParsedStep, parse_plan_markdown
from ndomo.runtime.context import TurnContext
from ndomo.runtime.events import PlanChanged
from ndomo.schema import Schema
from ndomo.store.models import TERMINAL_PLAN_STATUSES, Plan, PlanCreate, Task, TaskCreate
from ndomo.store.text import norm_description

log = logging.getLogger(__name__)

_MAX_OVERVIEW = 8000


class StepIn(Schema):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)
    description: str = Field(min_length=1, description="one line")
    files: list[str] = Field(default_factory=list)
    complexity: int | None = Field(default=None, ge=1, le=5, description="1 trivial..5 hard")
    risk: Literal["low", "medium", "high"] | None = None
    details: str | None = Field(default=None, description="notes for the builder")


class CommitPlanParams(Schema):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)
    title: str = Field(min_length=1, max_length=200)
    steps: list[StepIn] | None = Field(default=None, description="in order, ≤5")
    markdown: str | None = Field(
        default=None, description="instead of steps: headings, checkboxes or a numbered list"
    )

    @model_validator(mode="after")
    def _one_source(self) -> CommitPlanParams:
        if not self.steps and not (self.markdown and self.markdown.strip()):
            raise ValueError("give steps (a non-empty list) or markdown")
        return self


class Committed(Schema):
    plan: Plan
    tasks: list[Task]
    warnings: list[str] = Field(default_factory=list)
    replaced: str | None = None  # slug of the draft this plan replaces
    note: str = ""

    def render(self, head: str = "committed plan") -> str:
        lines = [
            f"{head} {self.plan.slug} with {len(self.tasks)} tasks (status {self.plan.status})"
            + (f", replacing draft {self.replaced}" if self.replaced else "")
            + ":"
        ]
        for t in self.tasks:
            files = f" [{', '.join(t.files)}]" if t.files else ""
            lines.append(f"  {t.ord}. {t.description} → {t.agent or '?'}{files}")
        if self.note:
            lines.append(self.note)
        lines += [f"warning: {w}" for w in self.warnings]
        return "\n".join(lines)


def steps_from_parsed(parsed: list[ParsedStep]) -> list[StepIn]:
    return [
        StepIn(description=s.description, files=s.files, details=s.details or None) for s in parsed
    ]


def _task(step: StepIn) -> TaskCreate:
    meta: dict = {}
    if step.risk:
        meta["risk"] = step.risk
    if step.details:
        meta["details"] = step.details
    return TaskCreate(
        description=step.description, files=step.files, complexity=step.complexity, metadata=meta
    )


async def _announce(ctx: TurnContext, plan_id: str) -> None:
    await ctx.runtime.emit(ctx, PlanChanged(plan_id=plan_id))


async def _make_committed(ctx: TurnContext, plan_id: str) -> None:
    store = await ctx.app.store()
    await store.update_session(ctx.session.id, committed_plan_id=plan_id)
    ctx.session.committed_plan_id = plan_id
    try:
        await ctx.runtime.publish_status(ctx.session)
    except Exception:  # noqa: BLE001 - the status bar is a courtesy; the plan is committed either way
        log.exception("status publish after commit failed")


async def commit_steps(
    ctx: TurnContext,
    *,
    title: str,
    steps: list[StepIn],
    overview: str,
    source_file: str | None = None,
    replaced: str | None = None,
) -> Committed:
    """Create the plan and its tasks (routed by files), then commit it for the session."""
    store = await ctx.app.store()
    metadata = {"source_file": source_file} if source_file else {}
    plan = await store.create_plan(
        PlanCreate(
            title=title[:200],
            overview=overview.strip()[:_MAX_OVERVIEW] or title,
            metadata=metadata,
            files=[source_file] if source_file else [],
            session_id=ctx.session.id,
            created_by_agent=ctx.agent_name,
        )
    )
    try:
        batch = await store.create_tasks(
            plan.id,
            [_task(s) for s in steps],
            router=make_router(ctx.agent.role if ctx.agent else None),
        )
    except Exception:  # noqa: BLE001 - no half plan: any failure removes the plan, then re-raises
        # no half plan: a plan without its tasks would mislead the planner
        await store.update_plan_status(
            plan.id,
            "abandoned",
            actor=ctx.agent_name,
            session_id=ctx.session.id,
            reason="its tasks could not be created",
        )
        raise
    await _make_committed(ctx, plan.id)
    await _announce(ctx, plan.id)
    plan = await store.get_plan(plan.id)
    return Committed(plan=plan, tasks=batch.tasks, warnings=batch.warnings, replaced=replaced)


def overview_of(steps: list[StepIn]) -> str:
    return "\n".join(f"{i}. {s.description}" for i, s in enumerate(steps, 1))


async def commit_plan_params(ctx: TurnContext, p: CommitPlanParams) -> Committed:
    if p.steps:
        steps = list(p.steps)
        overview = p.markdown or overview_of(steps)
    else:
        parsed = parse_plan_markdown(p.markdown or "")
        steps = steps_from_parsed(parsed.steps)
        if not steps:
            raise ValueError(
                "no steps found in markdown: use headings, checkboxes (- [ ] …) or a numbered list (1. …)"
            )
        overview = p.markdown or ""
    return await commit_steps(ctx, title=p.title, steps=steps, overview=overview)


async def plan_from_file(ctx: TurnContext, rel: str, text: str) -> str | None:
    """Plan-in-a-file, told of every file a tool wrote: the note for the write's result."""
    try:
        return await commit_plan_file(ctx, rel, text)
    except Exception as exc:  # noqa: BLE001 - the write itself succeeded; say why the plan did not
        log.exception("plan-in-a-file commit of %s failed", rel)
        return f"(note: {rel} looks like a plan but could not be committed as one: {exc})"


async def commit_plan_file(ctx: TurnContext, rel: str, text: str) -> str | None:
    """Plan-in-a-file: commit a plan-shaped markdown write; None when the file is not one.

    A rewrite of the same file does not pile up plans: identical steps change nothing; a
    still-draft plan from that file is abandoned and replaced; an approved or executing one
    gets the new steps appended (duplicates skipped, removed steps left for the planner).
    """
    from ndomo.plan.markdown import is_plan_filename

    if not is_plan_filename(rel):
        return None
    parsed = parse_plan_markdown(text)
    if len(parsed.steps) < 2:
        return None
    steps = steps_from_parsed(parsed.steps)
    title = parsed.title or rel.rsplit("/", 1)[-1].rsplit(".", 1)[0].replace("-", " ").replace(
        "_", " "
    )
    store = await ctx.app.store()
    earlier = [
        p
        for p in await store.search_plans(file_path=rel)
        if p.metadata.get("source_file") == rel and p.status not in TERMINAL_PLAN_STATUSES
    ]
    replaced = None
    if earlier:
        old = earlier[0]
        old_tasks = await store.list_tasks(old.id)
        if [norm_description(t.description) for t in old_tasks] == [
            norm_description(s.description) for s in steps
        ]:
            return f"(plan {old.slug} from {rel} already has these {len(steps)} steps; unchanged)"
        if old.status != "draft":
            batch = await store.create_tasks(
                old.id,
                [_task(s) for s in steps],
                router=make_router(ctx.agent.role if ctx.agent else None),
            )
            await _announce(ctx, old.id)
            added = ", ".join(f"{t.ord}. {t.description}" for t in batch.tasks) or "none"
            return (
                f"also updated plan {old.slug} ({old.status}) from {rel}: new tasks {added}; "
                "steps removed from the file stay in the plan"
            )
        await store.update_plan_status(
            old.id,
            "abandoned",
            actor=ctx.agent_name,
            session_id=ctx.session.id,
            reason=f"{rel} was rewritten",
        )
        replaced = old.slug
    done = await commit_steps(
        ctx, title=title, steps=steps, overview=text, source_file=rel, replaced=replaced
    )
    return "also " + done.render(head="committed as plan")
