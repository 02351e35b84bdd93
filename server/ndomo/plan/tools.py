"""The plan-store tools. Arguments use the store's field names; the caller's agent and
session are filled in from the turn, never taken from the model."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, TypedDict

from pydantic import ConfigDict, Field, StrictBool
from pydantic.json_schema import JsonDict

from ndomo.agents.routing import make_router
from ndomo.plan import render
from ndomo.plan.commit import CommitPlanParams, commit_plan_params
from ndomo.runtime.context import TurnContext
from ndomo.runtime.events import PlanChanged
from ndomo.runtime.tools import HIDDEN, Risk, ToolError, ToolResult, tool
from ndomo.schema import Schema
from ndomo.store.errors import StoreError
from ndomo.store.models import PlanCreate, PlanStatus, Priority, TaskCreate, TaskStatus


class _PlanTool(TypedDict):
    """The keywords every plan tool shares (typed, so `tool(**PLAN)` is checked)."""

    risk: Risk
    permission: str


PLAN: _PlanTool = {"risk": "plan", "permission": "plan_db"}
OFF: JsonDict = {HIDDEN: True}  # accepted, not offered: keeps the request small


class _P(Schema):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)


@asynccontextmanager
async def _store(ctx: TurnContext) -> AsyncIterator[Any]:
    """The store, with its deliberate errors turned into readable tool failures."""
    try:
        yield await ctx.app.store()
    except StoreError as exc:
        raise ToolError(exc.message) from None


async def _changed(ctx: TurnContext, plan_id: str) -> None:
    await ctx.runtime.emit(ctx, PlanChanged(plan_id=plan_id))


# -- plans ---------------------------------------------------------------------------------


class PlanCreateParams(_P):
    title: str = Field(min_length=1, max_length=200)
    overview: str = Field(min_length=1, description="What and why.")
    approach: str | None = None
    priority: Priority = Field(default="medium", json_schema_extra=OFF)
    complexity: int | None = Field(default=None, ge=1, le=5, json_schema_extra=OFF)
    category: str | None = Field(default=None, json_schema_extra=OFF)
    slug: str | None = Field(default=None, json_schema_extra=OFF)
    tags: list[str] = Field(default_factory=list, json_schema_extra=OFF)
    files: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict, json_schema_extra=OFF)


@tool(
    "plan_create",
    PlanCreateParams,
    description="Create a draft plan; then task_create_batch.",
    plan_step="drafts_plan",
    **PLAN,
)
async def plan_create(ctx: TurnContext, p: PlanCreateParams) -> str:
    async with _store(ctx) as store:
        plan = await store.create_plan(
            PlanCreate(**p.model_dump(), session_id=ctx.session.id, created_by_agent=ctx.agent_name)
        )
    await _changed(ctx, plan.id)
    return "created " + render.plan_line(plan)


class PlanRef(_P):
    id: str = Field(min_length=1, description="id or slug")


@tool("plan_get", PlanRef, description="A plan with its tasks.", **PLAN)
async def plan_get(ctx: TurnContext, p: PlanRef) -> str:
    async with _store(ctx) as store:
        return render.plan_detail(await store.get_plan(p.id))


class PlanListParams(_P):
    status: PlanStatus | None = None
    include_archived: StrictBool = Field(default=False, json_schema_extra=OFF)
    limit: int = Field(default=20, ge=1, le=200, json_schema_extra=OFF)


@tool("plan_list", PlanListParams, description="Plans, newest first.", **PLAN)
async def plan_list(ctx: TurnContext, p: PlanListParams) -> str:
    async with _store(ctx) as store:
        plans = await store.list_plans(p.status, include_archived=p.include_archived, limit=p.limit)
    return render.plans_list(plans)


class PlanSearchParams(_P):
    query: str | None = None
    file_path: str | None = None
    include_archived: StrictBool = Field(default=False, json_schema_extra=OFF)
    limit: int = Field(default=20, ge=1, le=200, json_schema_extra=OFF)


@tool("plan_search", PlanSearchParams, description="Search plans.", **PLAN)
async def plan_search(ctx: TurnContext, p: PlanSearchParams) -> str:
    if not (p.query or p.file_path):
        raise ToolError("give query, file_path or both")
    async with _store(ctx) as store:
        plans = await store.search_plans(
            p.query, file_path=p.file_path, include_archived=p.include_archived, limit=p.limit
        )
    return render.plans_list(plans, "no plans match")


class PlanStatusParams(PlanRef):
    status: PlanStatus
    reason: str | None = None
    dry_run: StrictBool = Field(default=False, json_schema_extra=OFF)
    force: StrictBool = Field(default=False, json_schema_extra=OFF)


@tool(
    "plan_update_status",
    PlanStatusParams,
    description="Change a plan's status.",
    plan_step="starts_work",
    **PLAN,
)
async def plan_update_status(ctx: TurnContext, p: PlanStatusParams) -> str:
    async with _store(ctx) as store:
        change = await store.update_plan_status(
            p.id,
            p.status,
            actor=ctx.agent_name,
            session_id=ctx.session.id,
            dry_run=p.dry_run,
            force=p.force,
            reason=p.reason,
        )
    if change.applied:
        await _changed(ctx, change.plan_id)
    return render.status_change(change)


class PlanDeleteParams(PlanRef):
    confirm: StrictBool = Field(default=False, description="must be true")


@tool(
    "plan_delete",
    PlanDeleteParams,
    description="Delete a non-draft plan with no active tasks.",
    **PLAN,
)
async def plan_delete(ctx: TurnContext, p: PlanDeleteParams) -> str:
    async with _store(ctx) as store:
        gone = await store.delete_plan(p.id, p.confirm, actor=ctx.agent_name)
    await _changed(ctx, gone.plan_id)
    return f"deleted plan {gone.slug} and its {gone.tasks_deleted} tasks"


# -- tasks ---------------------------------------------------------------------------------


class TaskBatchParams(_P):
    plan_id: str = Field(min_length=1)
    tasks: list[TaskCreate] = Field(min_length=1, description="dependencies: 1-based positions")


@tool(
    "task_create_batch",
    TaskBatchParams,
    description="Append tasks to a plan (≤5 best).",
    plan_step="adds_tasks",
    **PLAN,
)
async def task_create_batch(ctx: TurnContext, p: TaskBatchParams) -> str:
    async with _store(ctx) as store:
        batch = await store.create_tasks(
            p.plan_id, p.tasks, router=make_router(ctx.agent.role if ctx.agent else None)
        )
        plan = await store.get_plan(p.plan_id)
    await _changed(ctx, plan.id)
    out = [f"added {len(batch.tasks)} tasks to {plan.slug}:"] + [
        "  " + render.task_line(t) for t in batch.tasks
    ]
    out += [f"warning: {w}" for w in batch.warnings]
    return "\n".join(out)


class TaskListParams(_P):
    plan_id: str = Field(min_length=1)
    status: TaskStatus | None = None


@tool("task_list", TaskListParams, description="A plan's tasks in order.", **PLAN)
async def task_list(ctx: TurnContext, p: TaskListParams) -> str:
    async with _store(ctx) as store:
        tasks = await store.list_tasks(p.plan_id, p.status)
    return "\n".join(render.task_line(t) for t in tasks) if tasks else "no tasks"


class TaskStatusParams(_P):
    id: int = Field(ge=1, description="task #number")
    status: TaskStatus
    result: str | None = None
    error: str | None = None
    tokens: int | None = Field(default=None, ge=0, json_schema_extra=OFF)


@tool(
    "task_update_status",
    TaskStatusParams,
    core=True,
    description="Set a task's status.",
    plan_step="starts_work",
    **PLAN,
)
async def task_update_status(ctx: TurnContext, p: TaskStatusParams) -> str:
    async with _store(ctx) as store:
        task = await store.update_task_status(
            p.id,
            p.status,
            result=p.result,
            error=p.error,
            agent=ctx.agent_name,
            session_id=ctx.session.id,
            tokens=p.tokens,
        )
    await _changed(ctx, task.plan_id)
    note = (
        f"\nthe result was long: the full text is kept in {task.result_artifact}"
        if task.result_artifact
        else ""
    )
    return "updated " + render.task_line(task) + note


class TaskNextParams(_P):
    agent: str | None = None
    plan_id: str | None = None
    peek: StrictBool = Field(default=False, description="look, don't claim")


@tool(
    "task_next_for_agent",
    TaskNextParams,
    description="Claim the next ready task (marks it running).",
    plan_step="starts_work",
    **PLAN,
)
async def task_next_for_agent(ctx: TurnContext, p: TaskNextParams) -> ToolResult | str:
    agent = p.agent or ctx.agent_name
    async with _store(ctx) as store:
        if p.peek:
            task = await store.peek_task_for_agent(agent, p.plan_id, ctx.session.id)
        else:
            task = await store.next_task_for_agent(agent, p.plan_id, ctx.session.id)
    if task is None:
        return f"no ready task for {agent}"
    if not p.peek:
        await _changed(ctx, task.plan_id)
    return ("next: " if p.peek else "claimed: ") + render.task_detail(task)


# -- commit_plan ---------------------------------------------------------------------------


@tool(
    "commit_plan",
    CommitPlanParams,
    core=True,
    kind="commit",  # only a mode that concludes in a plan admits it
    **PLAN,
    description="Commit the discussion as this session's plan: title + steps (or markdown).",
)
async def commit_plan(ctx: TurnContext, p: CommitPlanParams) -> str:
    async with _store(ctx):
        try:
            done = await commit_plan_params(ctx, p)
        except ValueError as exc:
            raise ToolError(str(exc)) from None
    return done.render()


TOOLS = [
    plan_create,
    plan_get,
    plan_list,
    plan_search,
    plan_update_status,
    plan_delete,
    task_create_batch,
    task_list,
    task_update_status,
    task_next_for_agent,
    commit_plan,
]
