"""User operations on plans and tasks (LSP command, CLI subcommand, slash command).

Handlers translate the store's errors into ActionError: unknown ids and bad values are
'invalid', refused operations and illegal transitions are 'failed'.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import ConfigDict, Field, StrictBool

from ndomo.actions import action, store_of
from ndomo.schema import Schema
from ndomo.store.models import (
    Plan,
    PlanDeleted,
    PlanDetail,
    PlanStatus,
    Progress,
    StatusChange,
    Task,
    TaskStatus,
)

if TYPE_CHECKING:
    from ndomo.app import App


class _P(Schema):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)


SESSION_ID = "session to record (default: none)"
LIMIT = "at most this many rows (1-1000)"
ARCHIVED = "also list archived (finished) plans"


class PlanListParams(_P):
    status: PlanStatus | None = Field(default=None, description="only plans in this status")
    include_archived: StrictBool = Field(default=False, description=ARCHIVED)
    limit: int = Field(default=50, ge=1, le=1000, description=LIMIT)


class PlanRef(_P):
    id: str = Field(min_length=1, description="plan uuid or slug")


class PlanSearchParams(_P):
    query: str | None = Field(
        default=None, description="words to find in titles, overviews and tasks (full-text)"
    )
    file_path: str | None = Field(
        default=None, description="only plans that touch this file (workspace-relative)"
    )
    include_archived: StrictBool = Field(default=False, description=ARCHIVED)
    limit: int = Field(default=50, ge=1, le=1000, description=LIMIT)


class PlanApproveParams(PlanRef):
    session_id: str | None = Field(default=None, description=SESSION_ID)


class PlanStatusParams(PlanRef):
    status: PlanStatus = Field(description="the status to move the plan to")
    dry_run: StrictBool = Field(
        default=False, description="say whether the move is allowed, change nothing"
    )
    force: StrictBool = Field(
        default=False, description="skip the status machine's checks (needs --reason)"
    )
    reason: str | None = Field(default=None, description="why, kept in the plan's audit trail")
    session_id: str | None = Field(default=None, description=SESSION_ID)
    actor: str = Field(default="user", description="who made the change, for the audit trail")


class PlanDeleteParams(PlanRef):
    confirm: StrictBool = Field(default=False, description="must be the boolean true")


class TaskListParams(_P):
    plan: str = Field(min_length=1, description="plan uuid or slug")
    status: TaskStatus | None = Field(default=None, description="only tasks in this status")


class TaskNextParams(_P):
    agent: str = Field(
        min_length=1, description="the agent the task is for (e.g. craftsman, python-smith)"
    )
    plan: str | None = Field(default=None, description="only from this plan (uuid or slug)")
    session_id: str | None = Field(default=None, description="session claiming the task")
    peek: StrictBool = Field(default=False, description="show the next task without claiming it")


class TaskStatusParams(_P):
    id: int = Field(ge=1, description="task id (from `ndomo task list`)")
    status: TaskStatus = Field(description="the task's new status")
    result: str | None = Field(default=None, description="what was done (kept with the task)")
    error: str | None = Field(default=None, description="why it failed or is blocked")
    agent: str | None = Field(default=None, description="agent that executed it")
    session_id: str | None = Field(default=None, description="session that executed it")


@action("plan.list", PlanListParams, summary="List plans (newest first)", read_only=True)
async def plan_list(app: App, p: PlanListParams) -> list[Plan]:
    async with store_of(app) as s:
        return await s.list_plans(p.status, include_archived=p.include_archived, limit=p.limit)


@action(
    "plan.show",
    PlanRef,
    summary="Show a plan with its tasks, files, tags, progress and audit",
    read_only=True,
)
async def plan_show(app: App, p: PlanRef) -> PlanDetail:
    async with store_of(app) as s:
        return await s.get_plan(p.id)


@action(
    "plan.search",
    PlanSearchParams,
    summary="Search plans by text and/or by a file they touch",
    read_only=True,
)
async def plan_search(app: App, p: PlanSearchParams) -> list[Plan]:
    async with store_of(app) as s:
        return await s.search_plans(
            p.query, file_path=p.file_path, include_archived=p.include_archived, limit=p.limit
        )


@action("plan.approve", PlanApproveParams, summary="Approve a draft plan")
async def plan_approve(app: App, p: PlanApproveParams) -> StatusChange:
    async with store_of(app) as s:
        return await s.approve_plan(p.id, actor="user", session_id=p.session_id)


@action("plan.status", PlanStatusParams, summary="Move a plan to another status (dry_run, force)")
async def plan_status(app: App, p: PlanStatusParams) -> StatusChange:
    async with store_of(app) as s:
        return await s.update_plan_status(
            p.id,
            p.status,
            actor=p.actor,
            session_id=p.session_id,
            dry_run=p.dry_run,
            force=p.force,
            reason=p.reason,
        )


@action("plan.delete", PlanDeleteParams, summary="Delete a finished plan (needs confirm: true)")
async def plan_delete(app: App, p: PlanDeleteParams) -> PlanDeleted:
    async with store_of(app) as s:
        return await s.delete_plan(p.id, p.confirm)


@action(
    "plan.progress", PlanRef, summary="Task counts and percentage done of a plan", read_only=True
)
async def plan_progress(app: App, p: PlanRef) -> Progress:
    async with store_of(app) as s:
        return await s.plan_progress(p.id)


@action("task.list", TaskListParams, summary="List a plan's tasks", read_only=True)
async def task_list(app: App, p: TaskListParams) -> list[Task]:
    async with store_of(app) as s:
        return await s.list_tasks(p.plan, p.status)


@action("task.next", TaskNextParams, summary="Claim (or peek at) the next ready task for an agent")
async def task_next(app: App, p: TaskNextParams) -> Task | None:
    async with store_of(app) as s:
        if p.peek:
            return await s.peek_task_for_agent(p.agent, p.plan, p.session_id)
        return await s.next_task_for_agent(p.agent, p.plan, p.session_id)


@action("task.status", TaskStatusParams, summary="Set a task's status (and result or error)")
async def task_status(app: App, p: TaskStatusParams) -> Task:
    async with store_of(app) as s:
        return await s.update_task_status(
            p.id, p.status, result=p.result, error=p.error, agent=p.agent, session_id=p.session_id
        )
