"""Pydantic models for everything that goes in or out of the plan store."""

from __future__ import annotations

import re
from typing import Any, Literal, get_args

from pydantic import ConfigDict, Field, computed_field, field_validator

from ndomo.schema import Schema

PlanStatus = Literal["draft", "approved", "executing", "completed", "failed", "abandoned"]
TaskStatus = Literal["pending", "running", "done", "failed", "blocked"]
TurnStatus = Literal["running", "done", "cancelled", "failed", "blocked", "capped", "interrupted"]
Priority = Literal["low", "medium", "high", "critical"]
MemoryCategory = Literal["fact", "decision", "preference"]
ApprovalScope = Literal["session", "project"]
ApprovalAction = Literal["allow", "deny"]

PLAN_STATUSES: tuple[str, ...] = get_args(PlanStatus)
TASK_STATUSES: tuple[str, ...] = get_args(TaskStatus)
TURN_STATUSES: tuple[str, ...] = get_args(TurnStatus)
TERMINAL_PLAN_STATUSES = frozenset({"completed", "failed", "abandoned"})

SLUG_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")


class _In(Schema):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)


class _Out(Schema):
    model_config = ConfigDict(extra="ignore")


def check_slug(value: str) -> str:
    if not (1 <= len(value) <= 60) or not SLUG_RE.match(value):
        raise ValueError(
            f"slug {value!r} must be kebab-case (a-z, 0-9, single dashes), 1-60 characters"
        )
    return value


# ---------------------------------------------------------------- inputs


class PlanCreate(_In):
    slug: str | None = None
    title: str = Field(min_length=1, max_length=200)
    overview: str = Field(min_length=1)
    approach: str | None = None
    priority: Priority = "medium"
    complexity: int | None = Field(default=None, ge=1, le=5, strict=True)
    category: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    files: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    session_id: str | None = None
    created_by_agent: str | None = None

    @field_validator("slug")
    @classmethod
    def _slug(cls, v: str | None) -> str | None:
        return None if v is None else check_slug(v)


class TaskCreate(_In):
    """One task of a batch. `dependencies` are plan ords (1-based); see create_tasks."""

    description: str = Field(min_length=1)
    agent: str | None = None
    files: list[str] = Field(default_factory=list)
    complexity: int | None = Field(default=None, ge=1, le=5, strict=True)
    dependencies: list[int] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)


# ---------------------------------------------------------------- outputs


class Session(_Out):
    id: str
    created_at: str
    ended_at: str | None = None
    mode: str | None = None
    agent: str | None = None
    committed_plan_id: str | None = None
    title: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    used_at: str | None = None  # last message or open (schema v13)


class Plan(_Out):
    id: str
    slug: str
    title: str
    overview: str
    approach: str | None = None
    priority: str = "medium"
    complexity: int | None = None
    category: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    status: PlanStatus
    created_at: str
    updated_at: str
    archived_at: str | None = None
    archive_path: str | None = None
    original_plan_data: str | None = None
    created_by_agent: str | None = None
    executed_by_agent: str | None = None
    executed_by_session: str | None = None
    session_id: str | None = None


class Task(_Out):
    id: int
    plan_id: str
    ord: int
    description: str
    agent: str | None = None
    files: list[str] = Field(default_factory=list)
    complexity: int | None = None
    status: TaskStatus
    result: str | None = None
    error: str | None = None
    dependencies: list[int] = Field(default_factory=list, description="task ids")
    metadata: dict[str, Any] = Field(default_factory=dict)
    original_plan_data: str | None = None
    tokens: int | None = None
    duration_ms: int | None = None
    started_at: str | None = None
    finished_at: str | None = None
    claimed_by: str | None = None
    result_artifact: str | None = Field(
        default=None, description="workspace-relative file holding the full result"
    )

    @computed_field  # type: ignore[prop-decorator]  # mypy rejects decorators over @property; pydantic's documented form
    @property
    def result_spilled(self) -> bool:
        return self.result_artifact is not None


class Progress(_Out):
    total: int = 0
    done: int = 0
    failed: int = 0
    blocked: int = 0
    running: int = 0
    pending: int = 0
    percent: int = 0


class PlanStamp(_Out):
    """A plan's change marker: `live` is open (draft, approved, executing) and not archived."""

    id: str
    updated_at: str
    live: bool


class PlanFile(_Out):
    file_path: str
    role: str | None = None


class AuditEntry(_Out):
    id: int
    plan_id: str
    at: str
    actor: str | None = None
    from_status: str | None = None
    to_status: str
    forced: bool = False
    reason: str | None = None


class PlanDetail(Plan):
    tasks: list[Task] = Field(default_factory=list)
    files: list[PlanFile] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    progress: Progress = Field(default_factory=Progress)
    audit: list[AuditEntry] = Field(default_factory=list)


class StatusChange(_Out):
    plan_id: str
    slug: str
    from_status: str
    to_status: str
    allowed: bool
    applied: bool
    dry_run: bool = False
    forced: bool = False
    blockers: list[str] = Field(default_factory=list)
    message: str = ""
    archive_path: str | None = None


class TaskBatch(_Out):
    tasks: list[Task]
    warnings: list[str] = Field(default_factory=list)


class Turn(_Out):
    id: int
    session_id: str
    parent_turn_id: int | None = None
    agent: str | None = None
    mode: str | None = None
    prompt: str | None = None
    status: TurnStatus
    tokens_in: int = 0
    tokens_out: int = 0
    started_at: str
    finished_at: str | None = None
    error: str | None = None
    owner: str | None = None  # "<hostname>:<pid>" of the process that ran it
    # a code action's turn: {path, start_line, end_line, text} (runtime.events.TurnSelection)
    selection: dict[str, Any] | None = None


class TurnEdit(_Out):
    turn_id: int
    seq: int
    path: str
    before: str | None = None  # None: the file did not exist
    after: str | None = None  # None: the file was deleted


class Approval(_Out):
    id: int
    scope: ApprovalScope
    session_id: str | None = None
    permission: str
    pattern: str
    action: ApprovalAction
    created_at: str


class Memory(_Out):
    id: int
    session_id: str | None = None  # the session whose turn saved it (last saved it, if merged)
    category: MemoryCategory
    content: str
    created_at: str
    updated_at: str
    hits: int = 0
    merged: bool = False
    mode: str | None = None  # the mode of that turn; None: saved before notes had provenance
    from_web: bool = False  # that turn's context held web content (ever, once merged)


class PlanDeleted(_Out):
    plan_id: str
    slug: str
    tasks_deleted: int
