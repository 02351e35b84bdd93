"""Tasks: batch creation, status updates with result spill-over, atomic claiming."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence

from ndomo.store import artifacts
from ndomo.store.base import StoreBase, dumps, validate
from ndomo.store.core import PLAN_STARTED_SQL, plan_row, plan_started, task_dict
from ndomo.store.db import now
from ndomo.store.errors import Invalid, NotFound, Refused
from ndomo.store.models import TASK_STATUSES, TERMINAL_PLAN_STATUSES, Task, TaskBatch, TaskCreate
from ndomo.store.text import norm_description

__all__ = [
    "ANY_PENDING_SQL",
    "CLAIM_PICKED_SQL",
    "CLAIM_SQL",
    "PLAN_STARTED_SQL",
    "READY_SQL",
    "TaskOps",
]

SOFT_TASK_LIMIT = 5
Router = Callable[[TaskCreate], list[TaskCreate]]

# A pending task is ready when every dependency (a task id) is done; deleted ones don't block.
_READY = """
t.status = 'pending'
AND p.status IN ('draft', 'approved', 'executing')
AND NOT EXISTS (
  SELECT 1 FROM json_each(t.dependencies) d JOIN plan_tasks dt ON dt.id = d.value
  WHERE dt.status <> 'done'
)
"""


# The ready tasks of `agent` (?1), optionally of one plan (?2), oldest plan first, at most ?3.
# Plans are walked oldest first on idx_plans_open and each one's pending tasks for the agent
# are read in ord order from idx_tasks_ready (agent, status, plan_id, ord); the walk stops
# at the limit, so only the dependencies of the tasks about to be returned are checked,
# instead of every pending task of the agent being checked and sorted.
_READY_WALK = f"""
FROM plans p INDEXED BY idx_plans_open
CROSS JOIN plan_tasks t INDEXED BY idx_tasks_ready
  ON t.agent = ?1 AND t.status = 'pending' AND t.plan_id = p.id
WHERE p.status IN ('draft', 'approved', 'executing') AND (?2 IS NULL OR p.id = ?2) AND {_READY}
ORDER BY p.created_at, p.rowid, t.ord
"""
READY_SQL = f"SELECT t.* {_READY_WALK} LIMIT ?3"
PICK_SQL = f"SELECT t.id {_READY_WALK} LIMIT 1"
# The claim in one statement (?3 is the start time): inside BEGIN IMMEDIATE nobody else
# can write between the pick and the update, and RETURNING hands back the claimed row.
CLAIM_SQL = f"""
UPDATE plan_tasks SET status = 'running', claimed_by = ?1, started_at = ?3,
  finished_at = NULL, duration_ms = NULL
WHERE id = (SELECT t.id {_READY_WALK} LIMIT 1) AND status = 'pending'
RETURNING *
"""
# Claim one picked task (?2) if it is still pending and ready (another process may have
# taken it since it was picked outside the write lock).
CLAIM_PICKED_SQL = f"""
UPDATE plan_tasks SET status = 'running', claimed_by = ?1, started_at = ?3,
  finished_at = NULL, duration_ms = NULL
WHERE id = (SELECT t.id FROM plan_tasks t JOIN plans p ON p.id = t.plan_id
            WHERE t.id = ?2 AND t.agent = ?1 AND {_READY})
RETURNING *
"""
# "Has the agent any pending task at all?" — the cheap check before a claim.
ANY_PENDING_SQL = "SELECT 1 FROM plan_tasks INDEXED BY idx_tasks_pending WHERE agent = ? AND status = 'pending' LIMIT 1"


def task_from_row(row: sqlite3.Row) -> Task:
    return Task.model_validate(task_dict(row))


def _task_id_arg(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, str) and value.strip().lstrip("#").isdigit():
            return int(value.strip().lstrip("#"))
        raise Invalid(f"task id must be an integer, got {value!r}", field="id")
    return value


def _task_status_arg(status: object) -> None:
    if status not in TASK_STATUSES:
        raise Invalid(
            f"unknown task status {status!r}; expected one of {', '.join(TASK_STATUSES)}",
            field="status",
        )


class TaskOps(StoreBase):
    async def get_task(self, task_id: int) -> Task:
        return task_from_row(await self._read(_task_row, task_id))

    async def create_tasks(
        self,
        plan_id: str,
        tasks: Sequence[TaskCreate | dict],
        *,
        router: Router | None = None,
    ) -> TaskBatch:
        """Append tasks to a plan in one transaction.

        Identical descriptions (in the batch or already in the plan) are kept once.
        `dependencies` are plan ords, numbering the new tasks as given (before routing and
        de-duplication): existing tasks keep their ord, the batch continues from the last
        one. They are stored as task ids, and must point backwards, so no cycle can exist.
        """
        if isinstance(tasks, (str, bytes, dict)) or not hasattr(tasks, "__iter__"):
            raise Invalid("tasks must be a list of tasks", field="tasks")
        items = [validate(TaskCreate, t, f"tasks.{i}.") for i, t in enumerate(tasks)]
        routed = [router(t) if router else [t] for t in items]
        rows, warnings = await self._write(_create, plan_id, items, routed)
        return TaskBatch(tasks=[task_from_row(r) for r in rows], warnings=warnings)

    async def list_tasks(self, plan_id: str, status: str | None = None) -> list[Task]:
        if status is not None:
            _task_status_arg(status)
        return [task_from_row(r) for r in await self._read(_list, plan_id, status)]

    async def update_task_status(
        self,
        task_id: int,
        status: str,
        *,
        result: str | None = None,
        error: str | None = None,
        agent: str | None = None,
        session_id: str | None = None,
        tokens: int | None = None,
    ) -> Task:
        _task_status_arg(status)
        tid = _task_id_arg(task_id)
        artifact = None
        if result is not None and artifacts.needs_spill(result):
            await self._read(_task_row, tid)  # a missing task writes no file
            result, artifact = await artifacts.spill(self.workspace, tid, result)
        row = await self._write(
            _set_status,
            tid,
            status,
            result=result,
            error=error,
            agent=agent,
            session_id=session_id,
            tokens=tokens,
            artifact=artifact,
        )
        return task_from_row(row)

    async def peek_task_for_agent(
        self, agent: str, plan_id: str | None = None, session_id: str | None = None
    ) -> Task | None:
        rows = await self._read(_ready, agent, plan_id, 1)
        return task_from_row(rows[0]) if rows else None

    async def next_task_for_agent(
        self, agent: str, plan_id: str | None = None, session_id: str | None = None
    ) -> Task | None:
        """Claim the first ready task for `agent`; `session_id` is recorded as the executor.

        The claim is a conditional UPDATE inside BEGIN IMMEDIATE, so two processes never
        get the same task.
        """
        if not isinstance(agent, str) or not agent.strip():
            raise Invalid("agent must be a non-empty string", field="agent")
        # "Anything ready?" is answered outside the write lock (a claim that finds nothing
        # must not hold up writers); the write then claims the task picked, or walks again
        # if another process took it meanwhile.
        picked = await self._db.call(_pick, agent, plan_id)  # no snapshot needed: re-checked
        if picked is None:
            return None
        row = await self._write(_claim, agent, plan_id, session_id, picked)
        return None if row is None else task_from_row(row)


# ------------------------------------------------------------ on the store's thread


def _task_row(conn: sqlite3.Connection, task_id: object) -> sqlite3.Row:
    tid = _task_id_arg(task_id)
    row = conn.execute("SELECT * FROM plan_tasks WHERE id = ?", (tid,)).fetchone()
    if row is None:
        raise NotFound(f"no task with id {tid}", field="id")
    return row


def _create(
    conn: sqlite3.Connection,
    plan_id: str,
    items: list[TaskCreate],
    routed: list[list[TaskCreate]],
) -> tuple[list[sqlite3.Row], list[str]]:
    plan = plan_row(conn, plan_id)
    pid = plan["id"]
    if plan["status"] in TERMINAL_PLAN_STATUSES:
        raise Refused(f"plan {plan['slug']} is {plan['status']}; no new tasks", field="plan_id")
    existing = conn.execute(
        "SELECT id, ord, description FROM plan_tasks WHERE plan_id = ?", (pid,)
    ).fetchall()
    by_desc = {norm_description(r["description"]): r["id"] for r in existing}
    by_ord: dict[int, list[int]] = {r["ord"]: [r["id"]] for r in existing}
    base = max(by_ord, default=0)
    next_ord = base
    created: list[sqlite3.Row] = []
    warnings: list[str] = []
    for pos, (item, pieces) in enumerate(zip(items, routed, strict=True), start=1):
        vord = base + pos
        ids: list[int] = []
        deps: list[int] = []
        for d in item.dependencies:
            if d >= vord or d < 1:
                raise Invalid(
                    f"task {pos} ({item.description[:40]!r}) depends on {d}: dependencies"
                    f" must be earlier tasks (ords 1..{vord - 1})",
                    field=f"tasks.{pos - 1}.dependencies",
                )
            if d not in by_ord:
                raise Invalid(
                    f"task {pos} depends on unknown task {d}",
                    field=f"tasks.{pos - 1}.dependencies",
                )
            deps += by_ord[d]
        for piece in pieces or [item]:
            key = norm_description(piece.description)
            if key in by_desc:
                warnings.append(f"duplicate task skipped: {piece.description[:80]}")
                ids.append(by_desc[key])
                continue
            next_ord += 1
            original = dumps(
                {
                    "description": piece.description,
                    "files": piece.files,
                    "dependencies": piece.dependencies,
                }
            )
            (row,) = conn.execute(
                "INSERT INTO plan_tasks(plan_id, ord, description, agent, files, complexity,"
                " status, dependencies, metadata, original_plan_data)"
                " VALUES (?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?) RETURNING *",
                (
                    pid,
                    next_ord,
                    piece.description,
                    piece.agent,
                    dumps(piece.files),
                    piece.complexity,
                    dumps(list(dict.fromkeys(deps))),
                    dumps(piece.metadata),
                    original,
                ),
            ).fetchall()
            conn.executemany(
                "INSERT OR IGNORE INTO plan_files(plan_id, file_path, role) VALUES (?, ?, 'modified')",
                [(pid, f) for f in dict.fromkeys(piece.files)],
            )
            by_desc[key] = row["id"]
            ids.append(row["id"])
            created.append(row)
        by_ord[vord] = list(dict.fromkeys(ids))
    total = len(existing) + len(created)
    if total > SOFT_TASK_LIMIT:
        warnings.append(
            f"plan {plan['slug']} has {total} tasks (>{SOFT_TASK_LIMIT}): consider splitting it"
        )
    conn.execute("UPDATE plans SET updated_at = ? WHERE id = ?", (now(), pid))
    return created, warnings


def _list(conn: sqlite3.Connection, plan_id: str, status: str | None) -> list[sqlite3.Row]:
    sql = "SELECT * FROM plan_tasks WHERE plan_id = ?"
    params: list[object] = [plan_row(conn, plan_id)["id"]]
    if status:
        sql += " AND status = ?"
        params.append(status)
    return conn.execute(sql + " ORDER BY ord", params).fetchall()


def _set_status(
    conn: sqlite3.Connection,
    tid: int,
    status: str,
    *,
    result: str | None,
    error: str | None,
    agent: str | None,
    session_id: str | None,
    tokens: int | None,
    artifact: str | None,
) -> sqlite3.Row:
    """Running a task puts its plan to work and records who runs it."""
    row = _task_row(conn, tid)
    plan = plan_row(conn, row["plan_id"])
    if plan["status"] in TERMINAL_PLAN_STATUSES:
        raise Refused(f"plan {plan['slug']} is {plan['status']}; its tasks are closed", field="id")
    ts = now()
    sets = ["status = ?"]
    params: list[object] = [status]
    if status == "running":
        sets += ["started_at = ?", "finished_at = NULL", "duration_ms = NULL"]
        params.append(ts)
        if agent:
            sets.append("claimed_by = ?")
            params.append(agent)
    elif status == "pending":
        sets += [
            "started_at = NULL",
            "finished_at = NULL",
            "duration_ms = NULL",
            "claimed_by = NULL",
        ]
    else:
        sets += [
            "finished_at = ?",
            "duration_ms = CASE WHEN started_at IS NULL THEN NULL ELSE"
            " CAST(round((julianday(?) - julianday(started_at)) * 86400000) AS INTEGER) END",
        ]
        params += [ts, ts]
    if result is not None:
        sets += ["result = ?", "result_artifact = ?"]
        params += [result, artifact]
    if error is not None:
        sets.append("error = ?")
        params.append(error)
    if tokens is not None:
        sets.append("tokens = ?")
        params.append(tokens)
    conn.execute(f"UPDATE plan_tasks SET {', '.join(sets)} WHERE id = ?", (*params, tid))
    if status == "running":
        plan_started(conn, plan["id"], agent or row["agent"], session_id)
    return _task_row(conn, tid)


def _ready(
    conn: sqlite3.Connection, agent: str, plan_id: str | None, limit: int
) -> list[sqlite3.Row]:
    pid = None if plan_id is None else plan_row(conn, plan_id)["id"]
    return conn.execute(READY_SQL, (agent, pid, limit)).fetchall()


def _pick(conn: sqlite3.Connection, agent: str, plan_id: str | None) -> int | None:
    """The first ready task's id, or None; for an agent with no pending task at all, one
    probe of idx_tasks_pending answers without walking the open plans."""
    if plan_id is None and not conn.execute(ANY_PENDING_SQL, (agent,)).fetchall():
        return None
    pid = None if plan_id is None else plan_row(conn, plan_id)["id"]
    rows = conn.execute(PICK_SQL, (agent, pid)).fetchall()
    return rows[0][0] if rows else None


def _claim(
    conn: sqlite3.Connection,
    agent: str,
    plan_id: str | None,
    session_id: str | None,
    picked: int,
) -> sqlite3.Row | None:
    """Inside BEGIN IMMEDIATE: mark the picked task (else the first ready one) running and
    put its plan to work."""
    ts = now()
    rows = conn.execute(CLAIM_PICKED_SQL, (agent, picked, ts)).fetchall()
    if not rows:  # taken or blocked meanwhile: walk again, under the lock this time
        pid = None if plan_id is None else plan_row(conn, plan_id)["id"]
        rows = conn.execute(CLAIM_SQL, (agent, pid, ts)).fetchall()
    if not rows:
        return None
    plan_started(conn, rows[0]["plan_id"], agent, session_id)
    return rows[0]
