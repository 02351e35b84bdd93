"""The plan store at 10,000 plans / 50,000 tasks (`--scale 100k`: 100,000 / 500,000),
against the same queries on raw `sqlite3`.

Data is bulk-loaded with raw SQL into a schema made by the real migrations (the FTS and
updated_at triggers run). Each case runs the PlanStore call and its raw twin — the same
statements (imported from the store: `search_sql`, `list_sql`, `GET_PLAN_SQL`,
`PROGRESS_SQL`, `CLAIM_SQL`, `PLAN_STARTED_SQL`, …) on a plain synchronous sqlite3
connection with the store's PRAGMAs (`ndomo.plans.db.PRAGMAS`: synchronous=NORMAL …) — in
the same loop iteration, the order alternating. Every answer is checked for content.
"""

from __future__ import annotations

import asyncio
import itertools
import random
import sqlite3
import tempfile
import time
from pathlib import Path

from ndomo.plans.db import PRAGMAS, now
from ndomo.plans.plan_ops import (
    CHANGED_PLANS_SQL,
    COMMON_HITS,
    COMMON_SQL,
    GET_PLAN_SQL,
    PROGRESS_SQL,
    list_sql,
    search_sql,
)
from ndomo.plans.store import PlanStore
from ndomo.plans.task_ops import ANY_PENDING_SQL, CLAIM_SQL, PLAN_STARTED_SQL
from ndomo.plans.text import fts_query
from tests.bench.common import Result, summary

PLANS = 10_000
TASKS_PER_PLAN = 5
FILES = 1_000
N = 300
WORDS = [
    "parser",
    "cache",
    "router",
    "schema",
    "token",
    "widget",
    "ledger",
    "socket",
    "render",
    "config",
    "migrate",
    "index",
    "payment",
    "invoice",
    "session",
    "upload",
    "thumbnail",
    "search",
    "export",
    "import",
    "queue",
    "worker",
    "retry",
]
STATUSES = (
    ["draft"] * 2 + ["approved"] * 3 + ["executing"] * 3 + ["completed"] * 1 + ["abandoned"] * 1
)


def load(db: Path, plans: int = PLANS) -> None:
    rnd = random.Random(7)
    conn = sqlite3.connect(db)
    ts = "2025-01-01T00:00:00.000Z"
    with conn:
        conn.execute("INSERT INTO sessions(id, created_at) VALUES ('bench', ?)", (ts,))
        for i in range(plans):
            words = " ".join(rnd.sample(WORDS, 4))
            pid = f"p{i:05d}"
            conn.execute(
                "INSERT INTO plans(id, slug, title, overview, status, created_at, updated_at) VALUES (?,?,?,?,?,?,?)",
                (
                    pid,
                    f"plan-{i}",
                    f"Plan {i}: {words}",
                    f"Overview of {words} number {i}",
                    rnd.choice(STATUSES),
                    ts,
                    ts,
                ),
            )
            files = rnd.sample(range(FILES), 3)
            conn.executemany(
                "INSERT INTO plan_files(plan_id, file_path) VALUES (?, ?)",
                [(pid, f"src/mod{f}.py") for f in files],
            )
            conn.executemany(
                "INSERT INTO plan_tasks(plan_id, ord, description, agent, files, status) VALUES (?,?,?,?,?,?)",
                [
                    (
                        pid,
                        k + 1,
                        f"step {k} on {rnd.choice(WORDS)} for plan {i}",
                        "smith-a" if i % 2 else "smith-b",
                        f'["src/mod{files[k % 3]}.py"]',
                        "pending" if k >= 2 else rnd.choice(["done", "pending"]),
                    )
                    for k in range(TASKS_PER_PLAN)
                ],
            )
    conn.close()


class Raw:
    """The floor: the same SQL on a plain synchronous sqlite3 connection."""

    def __init__(self, db: Path) -> None:
        self.c = sqlite3.connect(db, isolation_level=None)
        self.c.row_factory = sqlite3.Row
        for pragma in PRAGMAS:  # the store's settings
            self.c.execute(f"PRAGMA {pragma}")

    def search(self, word: str) -> list:
        """The store's two statements: how common the word is, then the bounded search."""
        (n,) = self.c.execute(COMMON_SQL, (fts_query(word), COMMON_HITS)).fetchone()
        sql, params = search_sql(word, None, include_archived=False, common=n >= COMMON_HITS)
        return self.c.execute(sql, (*params, 50)).fetchall()

    def list(self, status: str | None) -> list:
        sql, params = list_sql(status, include_archived=False)
        return self.c.execute(sql, (*params, 50)).fetchall()

    def nothing_pending(self, agent: str) -> list:
        return self.c.execute(ANY_PENDING_SQL, (agent,)).fetchall()

    def changes(self, since: str) -> list:
        return self.c.execute(CHANGED_PLANS_SQL, (since, since)).fetchall()

    def get(self, slug: str) -> list:
        """The store's five reads (plan, tasks, files, tags, audit) in one read transaction."""
        self.c.execute("BEGIN")
        try:
            return [self.c.execute(sql, (slug,)).fetchall() for sql in GET_PLAN_SQL]
        finally:
            self.c.execute("COMMIT")

    def progress(self, slug: str) -> list:
        return self.c.execute(PROGRESS_SQL, (slug,)).fetchall()

    def claim(self, agent: str) -> int | None:
        """The store's claim statements: pick-and-update, put the plan to work, its transitions."""
        self.c.execute("BEGIN IMMEDIATE")
        try:
            row = self.c.execute(CLAIM_SQL, (agent, None, now())).fetchone()
            if row:
                pid = row["plan_id"]
                status = self.c.execute(PLAN_STARTED_SQL, (agent, None, now(), pid)).fetchone()[
                    "status"
                ]
                steps = {"draft": ["approved", "executing"], "approved": ["executing"]}.get(
                    status, []
                )
                for frm, to in itertools.pairwise([status, *steps]):
                    self.c.execute(
                        "SELECT * FROM plans WHERE id = ? OR slug = ?", (pid, pid)
                    ).fetchone()
                    self.c.execute(
                        "UPDATE plans SET status = ?, updated_at = ? WHERE id = ?", (to, now(), pid)
                    )
                    self.c.execute(
                        "INSERT INTO plan_audit(plan_id, at, actor, from_status, to_status, forced, reason)"
                        " VALUES (?, ?, ?, ?, ?, 0, 'a task started')",
                        (pid, now(), agent, frm, to),
                    )
            self.c.execute("COMMIT")
        except BaseException:
            self.c.execute("ROLLBACK")
            raise
        return row["id"] if row else None

    def by_file(self, path: str) -> list:
        sql, params = search_sql(None, path, include_archived=False)  # the store's statement
        return self.c.execute(sql, (*params, 50)).fetchall()


def _check(name: str, got: object) -> None:
    """An answer of the expected kind: a list/row set with content (claims may be None)."""
    if name.startswith(("search", "get", "list", "progress", "diagnostics")) and not got:
        raise RuntimeError(f"store case {name!r} answered nothing")


async def run(plans: int = PLANS) -> list[Result]:
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        db = root / ".ndomo" / "ndomo.db"
        store = await PlanStore.open(db, workspace=root)
        await store.close()
        t = time.perf_counter()
        await asyncio.to_thread(load, db, plans)
        load_s = time.perf_counter() - t
        store = await PlanStore.open(db, workspace=root)
        raw = Raw(db)
        rnd = random.Random(11)
        since = (await store._one("SELECT max(updated_at) FROM plans"))[0]
        cases = {
            "search (FTS, 1 common word)": (
                lambda w: store.search_plans(w),
                raw.search,
                lambda: rnd.choice(WORDS),
            ),
            "search (FTS, 1 rare word)": (
                lambda w: store.search_plans(w),
                raw.search,
                lambda: f"{rnd.randrange(plans)}",
            ),
            "list_plans (newest 50)": (
                lambda _: store.list_plans(),
                lambda _: raw.list(None),
                lambda: None,
            ),
            "list_plans(status=…)": (
                lambda st: store.list_plans(st),
                raw.list,
                lambda: rnd.choice(["draft", "approved", "executing"]),
            ),
            "get (plan + 5 tasks)": (
                store.get_plan,
                raw.get,
                lambda: f"plan-{rnd.randrange(plans)}",
            ),
            "progress": (store.plan_progress, raw.progress, lambda: f"plan-{rnd.randrange(plans)}"),
            "task claim (BEGIN IMMEDIATE)": (
                lambda _: store.next_task_for_agent("smith-a"),
                lambda _: raw.claim("smith-b"),
                lambda: None,
            ),
            "task claim, nothing pending": (
                lambda a: store.next_task_for_agent(a),
                raw.nothing_pending,
                lambda: "nobody",
            ),
            "diagnostics feed (changed or deleted since)": (
                lambda _: _feed(store, since),
                lambda _: raw.changes(since),
                lambda: None,
            ),
        }
        results = []
        try:
            for name, (mine, theirs, arg) in cases.items():
                ours, base = [], []
                for i in range(N + 20):
                    a = arg()
                    for who in ("mine", "raw") if i % 2 == 0 else ("raw", "mine"):
                        t = time.perf_counter()
                        got = await mine(a) if who == "mine" else theirs(a)
                        (ours if who == "mine" else base).append(time.perf_counter() - t)
                        if i == 0:
                            _check(name, got)
                results += _rows(name, ours[20:], base[20:])
            # plan diagnostics for 1,000 files: the store query behind them, plans touching each file
            ours, base = [], []
            for f in range(FILES):
                path = f"src/mod{f}.py"
                t = time.perf_counter()
                await store.search_plans(file_path=path)
                ours.append(time.perf_counter() - t)
                t = time.perf_counter()
                raw.by_file(path)
                base.append(time.perf_counter() - t)
            results += _rows("plans by file ×1000", ours, base, total=True)
        finally:
            raw.c.close()
            await store.close()
        for r in results:
            r.extra["load_seconds"] = round(load_s, 1)
            r.extra["plans"] = plans
            r.case = f"[{plans // 1000}k] {r.case}"
        return results


async def _feed(store, since: str) -> list:
    return await store.plan_changes(since)


def _rows(name: str, ours: list[float], base: list[float], total: bool = False) -> list[Result]:
    o, b = summary(ours), summary(base)
    rows = [
        Result("store", f"{name} p95", o["p95"], b["p95"], "ms", "p95 ≤ 5 ms", o["p95"] <= 5.0),
        Result("store", f"{name} p95 vs raw", o["p95"], b["p95"], "ms", "report", True),
        Result("store", f"{name} p50", o["p50"], b["p50"], "ms", "report", True),
    ]
    if total:
        rows.append(
            Result(
                "store", f"{name} total", sum(ours) * 1000, sum(base) * 1000, "ms", "report", True
            )
        )
    return rows
