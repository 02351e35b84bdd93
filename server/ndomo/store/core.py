"""Statements several parts of the store share: the plan row, the status machine with its
audit trail, sessions created on demand, and row decoding.

Plain synchronous functions of a `sqlite3.Connection`, called inside the transaction of
the store method that uses them (plans, tasks and sessions all move a plan's status).
This module imports no other part of the store, so the parts never import each other.
"""

from __future__ import annotations

import sqlite3

from ndomo.store.base import loads, row_dict
from ndomo.store.db import now
from ndomo.store.errors import Invalid, InvalidTransition, NotFound, Refused
from ndomo.store.models import PLAN_STATUSES, TERMINAL_PLAN_STATUSES, Session, StatusChange

TRANSITIONS: dict[str, frozenset[str]] = {
    "draft": frozenset({"approved", "abandoned"}),
    "approved": frozenset({"executing", "abandoned"}),
    "executing": frozenset({"completed", "failed", "abandoned"}),
    "completed": frozenset(),
    "failed": frozenset(),
    "abandoned": frozenset(),
}

PLAN_ROW_SQL = "SELECT * FROM plans WHERE id = ? OR slug = ?"
# Put a plan to work when one of its tasks starts; returns its status for the transitions.
PLAN_STARTED_SQL = """
UPDATE plans SET executed_by_agent = coalesce(executed_by_agent, ?),
  executed_by_session = coalesce(executed_by_session, ?), updated_at = ?
WHERE id = ? RETURNING status
"""


def plan_dict(row: sqlite3.Row) -> dict:
    d = row_dict(row)
    d["metadata"] = loads(d.get("metadata"), {})
    return d


def task_dict(row: sqlite3.Row) -> dict:
    """A task row with its JSON columns decoded: Task's input (also nested in PlanDetail)."""
    d = row_dict(row)
    d["files"] = loads(d.get("files"), [])
    d["dependencies"] = loads(d.get("dependencies"), [])
    d["metadata"] = loads(d.get("metadata"), {})
    return d


def plan_id_arg(value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise Invalid("plan id must be a non-empty string (uuid or slug)", field="id")
    return value.strip()


def check_status(status: object) -> None:
    if status not in PLAN_STATUSES:
        raise Invalid(
            f"unknown plan status {status!r}; expected one of {', '.join(PLAN_STATUSES)}",
            field="status",
        )


def plan_row(conn: sqlite3.Connection, id_or_slug: object) -> sqlite3.Row:
    key = plan_id_arg(id_or_slug)
    row = conn.execute(PLAN_ROW_SQL, (key, key)).fetchone()
    if row is None:
        raise NotFound(f"no plan with id or slug {key!r}", field="id")
    return row


def ensure_session_row(conn: sqlite3.Connection, session_id: str) -> None:
    """Make sure the session exists before something references it."""
    conn.execute(
        "INSERT OR IGNORE INTO sessions(id, created_at, metadata) VALUES (?, ?, '{}')",
        (session_id, now()),
    )


def audit_row(
    conn: sqlite3.Connection,
    pid: str,
    actor: str | None,
    from_status: str | None,
    to_status: str,
    forced: bool,
    reason: str | None,
    ts: str | None = None,
) -> None:
    conn.execute(
        "INSERT INTO plan_audit(plan_id, at, actor, from_status, to_status, forced, reason)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        (pid, ts or now(), actor, from_status, to_status, int(forced), reason),
    )


def change_status(
    conn: sqlite3.Connection,
    id_or_slug: str,
    status: str,
    *,
    actor: str | None,
    session_id: str | None,
    force: bool,
    reason: str | None,
    dry_run: bool = False,
) -> StatusChange:
    """Inside a transaction: check, then apply one transition and its audit row."""
    row = plan_row(conn, id_or_slug)
    pid, current = row["id"], row["status"]
    legal = status in TRANSITIONS[current]
    blockers: list[str] = []
    if status == "completed":
        active = conn.execute(
            "SELECT ord, status, description FROM plan_tasks WHERE plan_id = ?"
            " AND status IN ('pending', 'running') ORDER BY ord",
            (pid,),
        ).fetchall()
        blockers = [f"task {r['ord']} is {r['status']}: {r['description']}" for r in active]
    allowed = status != current and (force or (legal and not blockers))
    change = StatusChange(
        plan_id=pid,
        slug=row["slug"],
        from_status=current,
        to_status=status,
        allowed=allowed,
        applied=False,
        dry_run=dry_run,
        forced=force and allowed,
        blockers=blockers,
    )
    if not allowed:
        if status == current:
            change.message = f"plan {row['slug']} is already {current}"
        elif not legal:
            options = ", ".join(sorted(TRANSITIONS[current])) or "nothing (terminal state)"
            change.message = (
                f"plan {row['slug']} cannot go from {current} to {status};"
                f" allowed from {current}: {options}"
            )
        else:
            change.message = (
                f"plan {row['slug']} cannot be completed while tasks are pending or running: "
                + "; ".join(blockers)
            )
        if dry_run:
            return change
        if blockers and legal:
            raise Refused(change.message, field="status", blockers=blockers)
        raise InvalidTransition(change.message, field="status")
    change.message = f"plan {row['slug']}: {current} → {status}" + (" (forced)" if force else "")
    if dry_run:
        change.message = "would move " + change.message
        return change
    ts = now()
    if session_id:
        ensure_session_row(conn, session_id)
    sets = "status = ?, updated_at = ?"
    params: list[object] = [status, ts]
    if status == "executing":
        sets += (
            ", executed_by_agent = coalesce(executed_by_agent, ?),"
            " executed_by_session = coalesce(executed_by_session, ?)"
        )
        params += [actor, session_id]
    if current in TERMINAL_PLAN_STATUSES:
        sets += ", archived_at = NULL"  # a forced reopen shows up again; the file stays
    conn.execute(f"UPDATE plans SET {sets} WHERE id = ?", (*params, pid))
    audit_row(conn, pid, actor, current, status, force, reason, ts)
    change.applied = True
    return change


def plan_started(
    conn: sqlite3.Connection, plan_id: str, agent: str | None, session_id: str | None
) -> None:
    """A task of the plan started: record who runs it, and move a draft/approved plan to
    executing (through the status machine, so the audit trail shows each step)."""
    if session_id:
        ensure_session_row(conn, session_id)
    ((status,),) = conn.execute(PLAN_STARTED_SQL, (agent, session_id, now(), plan_id)).fetchall()
    steps = {"draft": ("approved", "executing"), "approved": ("executing",)}.get(status, ())
    for step in steps:
        change_status(
            conn,
            plan_id,
            step,
            actor=agent,
            session_id=session_id,
            force=False,
            reason="a task started",
        )


def session_from_row(row: sqlite3.Row) -> Session:
    d = dict(row)
    d["metadata"] = loads(d.get("metadata"), {})
    return Session.model_validate(d)
