"""Plans: creation, lookup, search, the status machine with its audit trail, deletion, archive."""

from __future__ import annotations

import functools
import logging
import sqlite3
import uuid
from collections.abc import Callable
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path

from pydantic import TypeAdapter

from ndomo.store import archive
from ndomo.store.base import StoreBase, dumps, row_dict, validate
from ndomo.store.core import (
    TRANSITIONS,
    audit_row,
    change_status,
    check_status,
    ensure_session_row,
    plan_dict,
    plan_id_arg,
    plan_row,
    task_dict,
)
from ndomo.store.db import now
from ndomo.store.errors import Invalid, NotFound, Refused
from ndomo.store.models import (
    TERMINAL_PLAN_STATUSES,
    Plan,
    PlanCreate,
    PlanDeleted,
    PlanDetail,
    PlanStamp,
    Progress,
    StatusChange,
)
from ndomo.store.text import fts_query, slugify, with_suffix

__all__ = ["TRANSITIONS", "PlanOps"]

log = logging.getLogger(__name__)


@functools.cache
def _plans() -> TypeAdapter[list[Plan]]:
    """Validates a whole result list in one call into pydantic-core, not one call per row;
    built on first use (at import it cost `ndomo run` 20-40 ms before its request)."""
    return TypeAdapter(list[Plan])


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


class PlanOps(StoreBase):
    # ------------------------------------------------------------ create / read

    async def create_plan(self, data: PlanCreate) -> Plan:
        data = validate(PlanCreate, data)
        return Plan.model_validate(plan_dict(await self._write(_create, data)))

    async def get_plan(self, id_or_slug: str) -> PlanDetail:
        key = plan_id_arg(id_or_slug)
        rows, task_rows, files, tags, audit = await self._read(_get, key)
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
            check_status(status)
        sql, params = list_sql(status, include_archived)
        rows = await self._all(sql, (*params, limit))
        return _plans().validate_python([plan_dict(r) for r in rows])

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
        rows = await self._read(search_rows, query, file_path, include_archived, limit)
        return _plans().validate_python([plan_dict(r) for r in rows])

    async def plan_progress(self, id_or_slug: str) -> Progress:
        key = plan_id_arg(id_or_slug)
        rows = await self._all(PROGRESS_SQL, (key,))
        if not rows:
            raise NotFound(f"no plan with id or slug {key!r}", field="id")
        return Progress.model_validate(
            _counts(r["status"] for r in rows if r["status"] is not None)
        )

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
        check_status(status)
        if force and not (reason and reason.strip()):
            raise Invalid("force needs a reason", field="reason")
        change = await self._write(
            change_status,
            id_or_slug,
            status,
            actor=actor,
            session_id=session_id,
            force=force,
            reason=reason,
            dry_run=dry_run,
        )
        if change.applied and status in TERMINAL_PLAN_STATUSES:
            path, err = await self._archive_quietly(change.plan_id)
            change.archive_path = path
            if err:
                change.message += f"; archive not written: {err}"
        return change

    # ------------------------------------------------------------ delete

    async def delete_plan(
        self, id_or_slug: str, confirm: object = False, *, actor: str = "user"
    ) -> PlanDeleted:
        """Refuses without confirm=True (a real bool), for drafts, and while tasks are active."""
        if confirm is not True:
            raise Refused("plan.delete requires confirm: true (the boolean)", field="confirm")
        return await self._write(_delete, id_or_slug, actor)

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
        await self._write(_mark_archived, plan_id, rel_path)

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


# ------------------------------------------------------------ on the store's thread


def _create(conn: sqlite3.Connection, data: PlanCreate) -> sqlite3.Row:
    pid = str(uuid.uuid4())
    ts = now()
    if data.session_id:
        ensure_session_row(conn, data.session_id)
    base = data.slug or slugify(data.title)
    slug, n = base, 2
    while conn.execute("SELECT 1 FROM plans WHERE slug = ?", (slug,)).fetchone():
        slug, n = with_suffix(base, n), n + 1
    conn.execute(
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
            dumps(data.model_dump(mode="json")),
            data.created_by_agent,
        ),
    )
    conn.executemany(
        "INSERT OR IGNORE INTO plan_tags(plan_id, tag) VALUES (?, ?)",
        [(pid, t) for t in dict.fromkeys(t for t in (s.strip() for s in data.tags) if t)],
    )
    conn.executemany(
        "INSERT OR IGNORE INTO plan_files(plan_id, file_path, role) VALUES (?, ?, 'input')",
        [(pid, f) for f in dict.fromkeys(f for f in (s.strip() for s in data.files) if f)],
    )
    return plan_row(conn, pid)


def _get(conn: sqlite3.Connection, key: str) -> list[list[sqlite3.Row]]:
    return [conn.execute(sql, (key,)).fetchall() for sql in GET_PLAN_SQL]


def search_rows(
    conn: sqlite3.Connection,
    query: str | None,
    file_path: str | None,
    include_archived: bool,
    limit: int,
) -> list[sqlite3.Row]:
    """What `search_plans` answers: the plans' rows, newest first."""
    sql, params = search_statement(conn, query, file_path, include_archived)
    if sql is None:
        return []
    if sql == recent_matching_sql(include_archived):
        rows = newest_matching(conn, str(params[0]), include_archived, limit)
        if rows is not None:
            return rows
    return conn.execute(sql, (*params, limit)).fetchall()


def _broad(conn: sqlite3.Connection, fp: str) -> bool:
    """Whether at least BROAD_FILES file rows lie at or under `fp` (counted no further)."""
    row = conn.execute(BROAD_SQL, (fp, fp + "/", fp + "0", BROAD_FILES)).fetchone()
    return bool(row[0] >= BROAD_FILES)


def _delete(conn: sqlite3.Connection, id_or_slug: str, actor: str) -> PlanDeleted:
    row = plan_row(conn, id_or_slug)
    pid, slug = row["id"], row["slug"]
    if row["status"] == "draft":
        raise Refused(
            f"cannot delete draft plan {slug}: abandon it or approve it first", field="id"
        )
    active = conn.execute(
        "SELECT ord, status FROM plan_tasks WHERE plan_id = ? AND status IN ('pending','running')"
        " ORDER BY ord",
        (pid,),
    ).fetchall()
    if active:
        listing = ", ".join(f"{r['ord']} ({r['status']})" for r in active)
        raise Refused(
            f"plan {slug} has active tasks — resolve them first: {listing}",
            field="id",
            blockers=[f"task {r['ord']} is {r['status']}" for r in active],
        )
    (n,) = conn.execute("SELECT count(*) FROM plan_tasks WHERE plan_id = ?", (pid,)).fetchone()
    conn.execute("DELETE FROM plans WHERE id = ?", (pid,))
    audit_row(conn, pid, actor, row["status"], "deleted", False, None)
    return PlanDeleted(plan_id=pid, slug=slug, tasks_deleted=int(n))


def _mark_archived(conn: sqlite3.Connection, plan_id: str, rel_path: str) -> None:
    conn.execute(
        "UPDATE plans SET archived_at = ?, archive_path = ? WHERE id = ?",
        (now(), rel_path, plan_id),
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
# A text search ranks at most this many matches: the COMMON_HITS newest-created (FTS rowid
# order, read backwards, stopping there), of which it returns the most recently updated.
# A word matching fewer plans is ranked exactly; a common word's cost stays flat however
# many plans match (walking plans by recency and probing the FTS index per plan was
# measured 15× slower, and collecting every hit grows with the table).
COMMON_HITS = 1000


# A file filter ranks the plans touching it on idx_plans_id_rank: its cost follows how many
# plans touch the file or folder — ~50 ms for a folder every plan touches at 10k plans. From
# this many file rows on, walking plans newest first and probing each one's files (its
# primary key) stops after `limit` matches instead: at least BROAD_FILES / (files per plan)
# plans match, so the walk is short. Both give the exact newest matches; the count reads at
# most this many index entries.
BROAD_FILES = 2000
_UNDER = "(file_path = ? OR (file_path >= ? AND file_path < ?))"
BROAD_SQL = (
    "SELECT count(*) FROM (SELECT 1 FROM plan_files INDEXED BY idx_plan_files_path_plan"
    f" WHERE {_UNDER} LIMIT ?)"
)


def recent_under_sql(fp: str, include_archived: bool) -> tuple[str, list[object]]:
    """Plans touching `fp` (a file or a folder), newest first, by walking plans in that order."""
    index = "idx_plans_updated" if include_archived else "idx_plans_recent"
    live = "" if include_archived else "archived_at IS NULL AND "
    return (
        f"SELECT * FROM plans INDEXED BY {index} WHERE {live}EXISTS (SELECT 1 FROM plan_files"
        f" WHERE plan_id = plans.id AND {_UNDER})"
        " ORDER BY updated_at DESC, search_key DESC LIMIT ?"
    ), [fp, fp + "/", fp + "0"]


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


def search_statement(
    conn: sqlite3.Connection, query: str | None, file_path: str | None, include_archived: bool
) -> tuple[str | None, list[object]]:
    """The statement `search_plans` runs (its last parameter is the limit), picked with
    what the database holds: the terms each typed word stands for, whether a folder is
    broad, and whether text and a broad folder match many plans. None when nothing can
    match."""
    fp = (file_path or "").strip().rstrip("/")
    by_text = bool((query or "").strip())
    if fp and not by_text and _broad(conn, fp):
        return recent_under_sql(fp, include_archived)
    sql, params = search_sql(
        query, file_path, include_archived, terms=lambda w: word_terms(conn, w)
    )
    if sql is not None and fp and by_text and _broad(conn, fp):
        (n,) = conn.execute(MANY_MATCHES_SQL, (params[0], BROAD_MATCHES)).fetchone()
        if n >= BROAD_MATCHES:
            return recent_matching_sql(include_archived), params
    return sql, params


# Text and a file are ranked by recency among every plan matching both: fine for a file,
# but text and a broad folder can match most plans (a common word under src/: 33,000 of
# 100k plans, ~45 ms ranked). From BROAD_MATCHES matches on (counted no further), the
# plans are walked newest first instead and each tested against the matches (collected
# once): the walk stops at the limit, about limit × plans / matches long. The same exact
# answers; collecting the matches remains (15-20 ms for that word at 100k plans).
BROAD_MATCHES = 2000
MANY_MATCHES_SQL = (
    "SELECT count(*) FROM (SELECT 1 FROM plan_search WHERE plan_search MATCH ? LIMIT ?)"
)


def recent_matching_sql(include_archived: bool) -> str:
    """Plans matching the FTS query (first parameter), newest first, by walking plans in
    that order (last parameter: the limit)."""
    index = "idx_plans_updated" if include_archived else "idx_plans_recent"
    live = "" if include_archived else "archived_at IS NULL AND "
    return (
        f"SELECT * FROM plans INDEXED BY {index} WHERE {live}search_key IN"
        " (SELECT rowid FROM plan_search WHERE plan_search MATCH ?)"
        " ORDER BY updated_at DESC, search_key DESC LIMIT ?"
    )


# The walk above still collects every match first (15-25 ms for a common word under a
# folder every plan touches, at 100k plans). Plans are mostly updated in the order they
# were created, so the newest matches by update are nearly always among the newest by
# creation: a window of those (FTS rowid order, read backwards and stopped: ~0.4 ms),
# NEWEST_WINDOW or WINDOW_PER_LIMIT × the limit, is ranked, and the answer is exact once
# no plan created before the window was updated after the last one returned. Such late
# plans (an index range on recency, at most LATE_PLANS) are tested against the matches:
# just below the window, by reading that stretch of them; further back, one FTS probe each
# (~0.25 ms: every term's doclist sought), at most LATE_PROBES. Past either bound the walk
# answers — old plans touched since (a claimed task, a status change) are what leaves this
# path, for ~1 ms more than the walk alone.
NEWEST_WINDOW = 200
WINDOW_PER_LIMIT = 4
LATE_PLANS = 64
LATE_PROBES = 8
MAX_WINDOW = 4000
WINDOW_SQL = "SELECT rowid FROM plan_search WHERE plan_search MATCH ? ORDER BY rowid DESC LIMIT ?"
RANGE_SQL = "SELECT rowid FROM plan_search WHERE plan_search MATCH ? AND rowid >= ? AND rowid < ?"
PROBE_SQL = "SELECT rowid FROM plan_search WHERE plan_search MATCH ? AND rowid = ?"


def newest_matching(
    conn: sqlite3.Connection, match: str, include_archived: bool, limit: int
) -> list[sqlite3.Row] | None:
    """The `limit` plans matching the FTS query `match` most recently updated, exactly as
    `recent_matching_sql` finds them; None when the window holds fewer than `limit` of
    them, or the plans created before it that may rank among them are too many to test
    (the walk answers then)."""
    live = "" if include_archived else " AND archived_at IS NULL"
    index = "idx_plans_updated" if include_archived else "idx_plans_recent"
    order = " ORDER BY updated_at DESC, search_key DESC"
    size = max(NEWEST_WINDOW, WINDOW_PER_LIMIT * limit)
    if limit < 1 or size > MAX_WINDOW:  # (the window's keys are one statement's parameters)
        return None
    window = [r[0] for r in conn.execute(WINDOW_SQL, (match, size))]
    if len(window) < size:
        return None  # the walk's collection is as small as the window
    low = window[-1]
    marks = ",".join("?" * len(window))
    ranked = [
        tuple(r)
        for r in conn.execute(
            "SELECT search_key, updated_at FROM plans INDEXED BY idx_plans_search_rank"
            f" WHERE search_key IN ({marks}){live}{order} LIMIT ?",
            (*window, limit),
        )
    ]
    if len(ranked) < limit:
        return None  # fewer live plans in the window than asked for
    key, updated = ranked[-1]
    late = conn.execute(
        f"SELECT search_key, updated_at FROM plans INDEXED BY {index} WHERE"
        f" (updated_at, search_key) > (?, ?) AND search_key < ?{live} LIMIT ?",
        (updated, key, low, LATE_PLANS + 1),
    ).fetchall()
    if len(late) > LATE_PLANS:
        return None
    if late:
        first = min(r[0] for r in late)
        if low - first <= size:  # just below the window: that stretch of the matches
            matching = {r[0] for r in conn.execute(RANGE_SQL, (match, first, low))}
        elif len(late) <= LATE_PROBES:
            matching = {r[0] for r in late if conn.execute(PROBE_SQL, (match, r[0])).fetchone()}
        else:
            return None
        ranked += [tuple(r) for r in late if r[0] in matching]
        ranked.sort(key=lambda r: (r[1], r[0]), reverse=True)
        del ranked[limit:]
    keys = [r[0] for r in ranked]
    marks = ",".join("?" * len(keys))
    return conn.execute(
        f"SELECT * FROM plans WHERE search_key IN ({marks}){order}", keys
    ).fetchall()


# A typed word longer than the prefix indexes (prefix = '1 2 3') is a prefix FTS5 answers
# by merging the doclists of every term it starts, whole, before the first row: 6 ms for
# a word in every plan at 100k plans, paid again by every AND and ORDER BY on it. When it
# starts at most EXPAND_TERMS terms it is searched as those terms instead (an OR of
# doclists read lazily, in rowid order). plan_search_terms has a row per occurrence, in
# term order, each ~1 µs, and each read from a point costs about one FTS lookup: up to
# TERM_ROWS rows from the word list every term of a rare word in one read, and a common
# term is skipped by reading on from just after it. ASCII letters and digits only: other
# words are folded by the tokenizer (case, diacritics) before they meet the index, which
# Python would have to imitate.
PREFIX_INDEXED = 3
EXPAND_TERMS = 16
TERM_ROWS = 16
TERM_SQL = "SELECT term FROM plan_search_terms WHERE term >= ? LIMIT ?"


def word_terms(conn: sqlite3.Connection, word: str) -> list[str] | None:
    """The indexed terms starting with `word`, or None when it is searched as a prefix."""
    if len(word) <= PREFIX_INDEXED or not (word.isascii() and word.isalnum()):
        return None
    word = word.lower()
    found: list[str] = []
    at = word
    while True:
        with closing(conn.execute(TERM_SQL, (at, TERM_ROWS))) as rows:
            n = 0
            for (term,) in rows:  # stepped one by one: no row past the word's terms is read
                if not term.startswith(word):
                    return found
                if not found or found[-1] != term:
                    if len(found) == EXPAND_TERMS:
                        return None
                    found.append(term)
                n += 1
        if n < TERM_ROWS:  # the index ends
            return found
        at = found[-1] + "\x01"  # just after that term: no term holds a control character


# plan_search.files (v21): each file a plan touches is the term U+E000 + hex(UTF-8 path),
# each folder above one U+E001 + hex(folder): both exact terms, never a prefix.
FILE_MARK, FOLDER_MARK = "\ue000", "\ue001"


def files_match(fp: str) -> str:
    """FTS5 query: the plans touching file `fp` or anything under folder `fp`."""
    key = fp.encode().hex()
    return f'{{files}} : ("{FILE_MARK}{key}" OR "{FOLDER_MARK}{key}")'


def search_sql(
    query: str | None,
    file_path: str | None,
    include_archived: bool,
    terms: Callable[[str], list[str] | None] | None = None,
) -> tuple[str | None, list[object]]:
    """The search statement (its last parameter is the limit); None when nothing can match.

    Newest first (updated_at, then search_key). Text only: the ≤ COMMON_HITS keys from the
    FTS index are ranked on the covering index idx_plans_search_rank (search_key,
    updated_at, archived_at), and only the plans returned are read from the table: the
    cost is bounded by COMMON_HITS, not by the table. Text and a file (or folder): one
    MATCH of both (the file is a column of the document), every match ranked the same way.
    A file (or folder) alone: the plans touching it, ranked on idx_plans_id_rank.
    `terms` is `word_terms` on the connection (see `fts_query`).
    """
    by_text = query is not None and bool(query.strip())
    by_file = file_path is not None and bool(file_path.strip())
    fp = (file_path or "").strip().rstrip("/")
    live = "" if include_archived else " AND archived_at IS NULL"
    order = " ORDER BY updated_at DESC, search_key DESC"
    if by_text:
        match = fts_query(query or "", terms)
        if match is None:
            return None, []
        hits = "SELECT rowid FROM plan_search WHERE plan_search MATCH ?"
        if by_file:
            match = f"({match}) AND {files_match(fp)}"
        else:
            hits += f" ORDER BY rowid DESC LIMIT {COMMON_HITS}"
        return (
            "SELECT * FROM plans WHERE search_key IN (SELECT search_key FROM plans"
            f" INDEXED BY idx_plans_search_rank WHERE search_key IN ({hits})"
            f"{live}{order} LIMIT ?){order}"
        ), [match]
    if not by_file:  # no filter at all: the newest plans, as list_plans
        return list_sql(None, include_archived)
    # A range, not substr(): idx_plan_files_path_plan serves both arms. '0' is the
    # character after '/', so [fp/, fp0) is exactly "under fp/".
    return (
        "SELECT * FROM plans WHERE id IN (SELECT id FROM plans INDEXED BY idx_plans_id_rank"
        " WHERE id IN (SELECT plan_id FROM plan_files WHERE file_path = ?"
        f" OR (file_path >= ? AND file_path < ?)){live}{order} LIMIT ?){order}"
    ), [fp, fp + "/", fp + "0"]
