"""Plans: creation, lookup, search, the status machine with its audit trail, deletion, archive."""

from __future__ import annotations

import logging
import sqlite3
import uuid
from datetime import UTC, datetime
from pathlib import Path

from pydantic import TypeAdapter

from ndomo.plans import archive
from ndomo.plans.base import StoreBase, dumps, loads, row_dict, validate
from ndomo.plans.db import now
from ndomo.plans.errors import Invalid, InvalidTransition, NotFound, Refused
from ndomo.plans.models import (
    PLAN_STATUSES,
    TERMINAL_PLAN_STATUSES,
    Plan,
    PlanCreate,
    PlanDeleted,
    PlanDetail,
    PlanStamp,
    Progress,
    StatusChange,
)
from ndomo.plans.program import Program
from ndomo.plans.sessions import ensure_session_row
from ndomo.plans.task_ops import task_dict
from ndomo.plans.text import fts_query, slugify, with_suffix

log = logging.getLogger(__name__)

TRANSITIONS: dict[str, frozenset[str]] = {
    "draft": frozenset({"approved", "abandoned"}),
    "approved": frozenset({"executing", "abandoned"}),
    "executing": frozenset({"completed", "failed", "abandoned"}),
    "completed": frozenset(),
    "failed": frozenset(),
    "abandoned": frozenset(),
}


def plan_dict(row: sqlite3.Row) -> dict:
    d = row_dict(row)
    d["metadata"] = loads(d.get("metadata"), {})
    return d


def plan_from_row(row: sqlite3.Row) -> Plan:
    return Plan.model_validate(plan_dict(row))


# Validating a whole result list in one call into pydantic-core, not one call per row.
_PLANS = TypeAdapter(list[Plan])


# The plan ?1 (an id or a slug), picked by id first as `plan_row` does.
_PICK = "(SELECT id FROM plans WHERE id = ?1 OR slug = ?1 ORDER BY id = ?1 DESC LIMIT 1)"
# get_plan: plan, tasks, files, tags, audit — read in one hop and one read transaction.
GET_PLAN_SQL: tuple[str, ...] = (
    f"SELECT * FROM plans WHERE id = {_PICK}",
    f"SELECT * FROM plan_tasks WHERE plan_id = {_PICK} ORDER BY ord",
    f"SELECT file_path, role FROM plan_files WHERE plan_id = {_PICK} ORDER BY file_path",
    f"SELECT tag FROM plan_tags WHERE plan_id = {_PICK} ORDER BY tag",
    f"SELECT * FROM plan_audit WHERE plan_id = {_PICK} ORDER BY id",
)
# plan_progress in one statement: a plan with no task gives one row of NULL, none gives no row.
PROGRESS_SQL = f"SELECT t.status FROM {_PICK} p LEFT JOIN plan_tasks t ON t.plan_id = p.id"


def _plan_id_arg(value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise Invalid("plan id must be a non-empty string (uuid or slug)", field="id")
    return value.strip()


class PlanOps(StoreBase):
    # ------------------------------------------------------------ lookup

    async def _plan_row(self, id_or_slug: str) -> sqlite3.Row:
        return await self._run(plan_row(id_or_slug))

    async def _unique_slug(self, base: str) -> str:
        slug, n = base, 2
        while await self._one("SELECT 1 FROM plans WHERE slug = ?", (slug,)):
            slug = with_suffix(base, n)
            n += 1
        return slug

    # ------------------------------------------------------------ create / read

    async def create_plan(self, data: PlanCreate) -> Plan:
        data = validate(PlanCreate, data)
        snapshot = dumps(data.model_dump(mode="json"))
        pid = str(uuid.uuid4())
        ts = now()
        async with self._tx():
            if data.session_id:
                await self._ensure_session_row(data.session_id)  # type: ignore[attr-defined]  # a sibling mixin of PlanStore provides it
            slug = await self._unique_slug(data.slug or slugify(data.title))
            await self._exec(
                "INSERT INTO plans(id, slug, title, overview, approach, priority, complexity,"
                " category, metadata, status, created_at, updated_at, session_id,"
                " original_plan_data, created_by_agent)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'draft', ?, ?, ?, ?, ?)",
                (
                    pid,
                    slug,
                    data.title,
                    data.overview,
                    data.approach,
                    data.priority,
                    data.complexity,
                    data.category,
                    dumps(data.metadata),
                    ts,
                    ts,
                    data.session_id,
                    snapshot,
                    data.created_by_agent,
                ),
            )
            for tag in dict.fromkeys(t for t in (s.strip() for s in data.tags) if t):
                await self._exec(
                    "INSERT OR IGNORE INTO plan_tags(plan_id, tag) VALUES (?, ?)", (pid, tag)
                )
            for path in dict.fromkeys(f for f in (s.strip() for s in data.files) if f):
                await self._exec(
                    "INSERT OR IGNORE INTO plan_files(plan_id, file_path, role) VALUES (?, ?, 'input')",
                    (pid, path),
                )
            return plan_from_row(await self._plan_row(pid))

    async def get_plan(self, id_or_slug: str) -> PlanDetail:
        key = _plan_id_arg(id_or_slug)
        rows, task_rows, files, tags, audit = await self._reads(
            *((sql, (key,)) for sql in GET_PLAN_SQL)
        )
        if not rows:
            raise NotFound(f"no plan with id or slug {key!r}", field="id")
        # Plain dicts validated in one call: no intermediate Plan/Task models to dump again.
        return PlanDetail.model_validate(
            {
                **plan_dict(rows[0]),
                "tasks": [task_dict(r) for r in task_rows],
                "files": [row_dict(r) for r in files],
                "tags": [r["tag"] for r in tags],
                "progress": _counts(r["status"] for r in task_rows),
                "audit": [row_dict(r) for r in audit],
            }
        )

    async def list_plans(
        self, status: str | None = None, *, include_archived: bool = False, limit: int = 50
    ) -> list[Plan]:
        if status is not None:
            _check_status(status)
        sql, params = list_sql(status, include_archived)
        rows = await self._all(sql, (*params, limit))
        return _PLANS.validate_python([plan_dict(r) for r in rows])

    async def plan_changes(self, since: str | None) -> list[PlanStamp]:
        """Plans whose `updated_at` is ≥ `since` (any state) and plans deleted since then
        (not live), or every live plan when `since` is None.

        Every write to a plan, its tasks, files or tags moves `updated_at`, and a deletion
        is logged (v15 triggers, so other processes' writes too): a caller that remembers
        what it read re-reads only what moved. Range reads on indexes.
        """
        if since is None:
            rows = await self._all(LIVE_PLANS_SQL)
        else:
            rows = await self._all(CHANGED_PLANS_SQL, (since, since))
        return [PlanStamp(id=r[0], updated_at=r[1], live=bool(r[2])) for r in rows]

    async def search_plans(
        self,
        query: str | None = None,
        *,
        file_path: str | None = None,
        include_archived: bool = False,
        limit: int = 50,
    ) -> list[Plan]:
        """Full-text over plans and their tasks, and/or plans touching a file (or a folder).

        Every word must appear (as a prefix) in the plan's text or its tasks' descriptions.
        """
        common = False
        if query is not None and query.strip() and not (file_path and file_path.strip()):
            match = fts_query(query)
            if match is None:
                return []
            row = await self._one(COMMON_SQL, (match, COMMON_HITS))
            common = bool(row and row[0] >= COMMON_HITS)
        sql, params = search_sql(query, file_path, include_archived, common=common)
        if sql is None:
            return []
        rows = await self._all(sql, (*params, limit))
        return _PLANS.validate_python([plan_dict(r) for r in rows])

    async def plan_progress(self, id_or_slug: str) -> Progress:
        key = _plan_id_arg(id_or_slug)
        rows = await self._all(PROGRESS_SQL, (key,))
        if not rows:
            raise NotFound(f"no plan with id or slug {key!r}", field="id")
        return _progress(r["status"] for r in rows if r["status"] is not None)

    # ------------------------------------------------------------ status machine

    async def approve_plan(
        self, id_or_slug: str, *, actor: str = "user", session_id: str | None = None
    ) -> StatusChange:
        """Legacy entry point: draft → approved only."""
        return await self.update_plan_status(
            id_or_slug, "approved", actor=actor, session_id=session_id
        )

    async def update_plan_status(
        self,
        id_or_slug: str,
        status: str,
        *,
        actor: str = "user",
        session_id: str | None = None,
        dry_run: bool = False,
        force: bool = False,
        reason: str | None = None,
    ) -> StatusChange:
        _check_status(status)
        if force and not (reason and reason.strip()):
            raise Invalid("force needs a reason", field="reason")
        change = await self._write(
            lambda: change_status(
                id_or_slug,
                status,
                actor=actor,
                session_id=session_id,
                force=force,
                reason=reason,
                dry_run=dry_run,
            )
        )
        if change.applied and status in TERMINAL_PLAN_STATUSES:
            path, err = await self._archive_quietly(change.plan_id)
            change.archive_path = path
            if err:
                change.message += f"; archive not written: {err}"
        return change

    async def _audit(
        self,
        pid: str,
        actor: str | None,
        from_status: str | None,
        to_status: str,
        forced: bool,
        reason: str | None,
        ts: str | None = None,
    ) -> None:
        await self._run(audit_row(pid, actor, from_status, to_status, forced, reason, ts))

    # ------------------------------------------------------------ delete

    async def delete_plan(
        self, id_or_slug: str, confirm: object = False, *, actor: str = "user"
    ) -> PlanDeleted:
        """Refuses without confirm=True (a real bool), for drafts, and while tasks are active."""
        if confirm is not True:
            raise Refused("plan.delete requires confirm: true (the boolean)", field="confirm")
        async with self._tx():
            row = await self._plan_row(id_or_slug)
            pid, slug = row["id"], row["slug"]
            if row["status"] == "draft":
                raise Refused(
                    f"cannot delete draft plan {slug}: abandon it or approve it first", field="id"
                )
            active = await self._all(
                "SELECT ord, status FROM plan_tasks WHERE plan_id = ? AND status IN ('pending','running')"
                " ORDER BY ord",
                (pid,),
            )
            if active:
                listing = ", ".join(f"{r['ord']} ({r['status']})" for r in active)
                raise Refused(
                    f"plan {slug} has active tasks — resolve them first: {listing}",
                    field="id",
                    blockers=[f"task {r['ord']} is {r['status']}" for r in active],
                )
            n = await self._one("SELECT count(*) FROM plan_tasks WHERE plan_id = ?", (pid,))
            assert n is not None  # an aggregate always returns one row
            await self._exec("DELETE FROM plans WHERE id = ?", (pid,))
            await self._audit(pid, actor, row["status"], "deleted", False, None)
            return PlanDeleted(plan_id=pid, slug=slug, tasks_deleted=int(n[0]))

    # ------------------------------------------------------------ archive

    async def archive_plan(self, id_or_slug: str) -> str:
        """Write the markdown archive, then mark the plan; a failed mark removes the file."""
        plan = await self.get_plan(id_or_slug)
        if plan.status not in TERMINAL_PLAN_STATUSES:
            raise Refused(f"plan {plan.slug} is {plan.status}; only finished plans are archived")
        keep = self.workspace / plan.archive_path if plan.archive_path else None
        date = datetime.now(UTC).strftime("%Y-%m-%d")
        path = await archive.write_archive(
            self.workspace, plan.slug, date, archive.render(plan), keep
        )
        rel = _relative(path, self.workspace)
        try:
            await self._mark_archived(plan.id, rel)
        except BaseException:
            await archive.remove_file(path)
            raise
        return rel

    async def _mark_archived(self, plan_id: str, rel_path: str) -> None:
        async with self._tx():
            await self._exec(
                "UPDATE plans SET archived_at = ?, archive_path = ? WHERE id = ?",
                (now(), rel_path, plan_id),
            )

    async def _archive_quietly(self, plan_id: str) -> tuple[str | None, str | None]:
        """A status change already committed must not fail because the archive could not be written."""
        try:
            return await self.archive_plan(plan_id), None
        except Exception as exc:  # noqa: BLE001 — reported to the caller, retried by archive_pending
            log.warning("archiving plan %s failed: %s", plan_id, exc)
            return None, str(exc)

    async def archive_pending(self) -> list[str]:
        """Archive finished plans whose archive was never written (e.g. after a crash)."""
        rows = await self._all(
            "SELECT id FROM plans WHERE archived_at IS NULL"
            " AND status IN ('completed', 'failed', 'abandoned')"
        )
        done = []
        for r in rows:
            path, _ = await self._archive_quietly(r["id"])
            if path:
                done.append(path)
        return done


# ------------------------------------------------------------ statement programs
# Run through StoreBase._run/_write: one hop to aiosqlite's thread for all their statements.

PLAN_ROW_SQL = "SELECT * FROM plans WHERE id = ? OR slug = ?"


def plan_row(id_or_slug: object) -> Program[sqlite3.Row]:
    key = _plan_id_arg(id_or_slug)
    rows = yield PLAN_ROW_SQL, (key, key)
    if not rows:
        raise NotFound(f"no plan with id or slug {key!r}", field="id")
    return rows[0]


def audit_row(
    pid: str,
    actor: str | None,
    from_status: str | None,
    to_status: str,
    forced: bool,
    reason: str | None,
    ts: str | None = None,
) -> Program[None]:
    yield (
        "INSERT INTO plan_audit(plan_id, at, actor, from_status, to_status, forced, reason)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        (pid, ts or now(), actor, from_status, to_status, int(forced), reason),
    )


def change_status(
    id_or_slug: str,
    status: str,
    *,
    actor: str | None,
    session_id: str | None,
    force: bool,
    reason: str | None,
    dry_run: bool = False,
) -> Program[StatusChange]:
    """Inside a transaction: check, then apply one transition and its audit row."""
    row = yield from plan_row(id_or_slug)
    pid, current = row["id"], row["status"]
    legal = status in TRANSITIONS[current]
    blockers: list[str] = []
    if status == "completed":
        active = yield (
            "SELECT ord, status, description FROM plan_tasks WHERE plan_id = ?"
            " AND status IN ('pending', 'running') ORDER BY ord",
            (pid,),
        )
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
        yield from ensure_session_row(session_id)
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
    yield f"UPDATE plans SET {sets} WHERE id = ?", (*params, pid)
    yield from audit_row(pid, actor, current, status, force, reason, ts)
    change.applied = True
    return change


def _check_status(status: object) -> None:
    if status not in PLAN_STATUSES:
        raise Invalid(
            f"unknown plan status {status!r}; expected one of {', '.join(PLAN_STATUSES)}",
            field="status",
        )


def _counts(statuses) -> dict[str, int]:
    """Progress fields from task statuses."""
    counts = {k: 0 for k in ("done", "failed", "blocked", "running", "pending")}
    total = 0
    for s in statuses:
        total += 1
        counts[s] = counts.get(s, 0) + 1
    percent = round(100 * counts["done"] / total) if total else 0
    return {"total": total, "percent": percent, **counts}


def _progress(statuses) -> Progress:
    return Progress.model_validate(_counts(statuses))


def _relative(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(path)


_LIVE = "archived_at IS NULL AND status IN ('draft', 'approved', 'executing')"
LIVE_PLANS_SQL = f"SELECT id, updated_at, 1 FROM plans INDEXED BY idx_plans_live WHERE {_LIVE}"
CHANGED_PLANS_SQL = (
    f"SELECT id, updated_at, {_LIVE} FROM plans INDEXED BY idx_plans_updated"
    " WHERE updated_at >= ?1"
    " UNION ALL SELECT plan_id, at, 0 FROM plan_deletions WHERE at >= ?2"
)
# A word matching at least this many plans is "common": its search collects only the
# COMMON_HITS newest-created matches (FTS rowid order, read backwards) and returns the most
# recently updated of those, so its cost stays flat however many plans match (a probe of
# the FTS index per plan was measured 15× slower). A rarer word collects all its hits.
COMMON_HITS = 1000
COMMON_SQL = "SELECT count(*) FROM (SELECT 1 FROM plan_search WHERE plan_search MATCH ? LIMIT ?)"


def list_sql(status: str | None, include_archived: bool) -> tuple[str, list[object]]:
    """The list statement (last parameter: the limit), newest first, read in index order."""
    where: list[str] = []
    params: list[object] = []
    index = "idx_plans_updated"
    if status is not None:
        where.append("status = ?")
        params.append(status)
        index = "idx_plans_status_all" if include_archived else "idx_plans_status_live"
    if not include_archived:
        where.append("archived_at IS NULL")
        if status is None:
            index = "idx_plans_recent"
    sql = f"SELECT * FROM plans INDEXED BY {index}" + (
        " WHERE " + " AND ".join(where) if where else ""
    )
    return sql + " ORDER BY updated_at DESC, search_key DESC LIMIT ?", params


def search_sql(
    query: str | None, file_path: str | None, include_archived: bool, *, common: bool = False
) -> tuple[str | None, list[object]]:
    """The search statement (its last parameter is the limit); None when nothing can match.

    Newest first. A text-only search walks idx_plans_recent (updated_at, search_key)
    backwards, stopping at the limit, instead of fetching and sorting every matching
    plan. `common` (the words match ≥ COMMON_HITS plans): only the COMMON_HITS
    newest-created matches are considered (a bounded walk); otherwise every hit is.
    A file filter matches few plans, which are fetched by id and sorted.
    """
    where: list[str] = []
    params: list[object] = []
    by_text = query is not None and bool(query.strip())
    by_file = file_path is not None and bool(file_path.strip())
    if by_text:
        match = fts_query(query or "")  # by_text: query is a str
        if match is None:
            return None, []
        if common and not by_file:
            where.append(
                "search_key IN (SELECT rowid FROM plan_search WHERE plan_search MATCH ?"
                f" ORDER BY rowid DESC LIMIT {COMMON_HITS})"
            )
        else:
            where.append("search_key IN (SELECT rowid FROM plan_search WHERE plan_search MATCH ?)")
        params.append(match)
    if by_file:
        fp = (file_path or "").strip().rstrip("/")  # by_file: file_path is a str
        # A range, not substr(): the plan_files(file_path) index serves both arms.
        # '0' is the character after '/', so [fp/, fp0) is exactly "under fp/".
        where.append(
            "id IN (SELECT plan_id FROM plan_files WHERE file_path = ?"
            " OR (file_path >= ? AND file_path < ?))"
        )
        params += [fp, fp + "/", fp + "0"]
    source = "plans"
    if not include_archived:
        where.append("archived_at IS NULL")
        if by_text and not by_file:  # common: fetch the ≤ COMMON_HITS keys and sort them (bounded)
            source = "plans INDEXED BY " + (
                "idx_plans_search_key" if common else "idx_plans_recent"
            )
    sql = f"SELECT * FROM {source}" + (" WHERE " + " AND ".join(where) if where else "")
    return sql + " ORDER BY updated_at DESC, search_key DESC LIMIT ?", params
