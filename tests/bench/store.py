"""The plan store at 10,000 plans / 50,000 tasks, against the same queries on raw `sqlite3`.

Data is bulk-loaded with raw SQL into a schema made by the real migrations (the FTS
triggers index it). Each case runs the PlanStore call and then its raw twin — the
same statements (imported from the store: `search_sql`, `GET_PLAN_SQL`, `PROGRESS_SQL`,
`CLAIM_SQL`, `PLAN_STARTED_SQL`) on a plain synchronous sqlite3 connection — in the same
loop iteration.
"""

from __future__ import annotations

import asyncio
import random
import sqlite3
import tempfile
import time
from pathlib import Path

from ndomo.plans.plan_ops import GET_PLAN_SQL, PROGRESS_SQL, search_sql
from ndomo.plans.store import PlanStore
from ndomo.plans.db import now
from ndomo.plans.task_ops import CLAIM_SQL, PLAN_STARTED_SQL
from tests.bench.common import Result, summary

PLANS = 10_000
TASKS_PER_PLAN = 5
FILES = 1_000
N = 300
WORDS = ("parser cache router schema token widget ledger socket render config migrate index "
         "payment invoice session upload thumbnail search export import queue worker retry").split()
STATUSES = ["draft"] * 2 + ["approved"] * 3 + ["executing"] * 3 + ["completed"] * 1 + ["abandoned"] * 1


def load(db: Path) -> None:
    rnd = random.Random(7)
    conn = sqlite3.connect(db)
    ts = "2025-01-01T00:00:00.000Z"
    with conn:
        conn.execute("INSERT INTO sessions(id, created_at) VALUES ('bench', ?)", (ts,))
        for i in range(PLANS):
            words = " ".join(rnd.sample(WORDS, 4))
            pid = f"p{i:05d}"
            conn.execute(
                "INSERT INTO plans(id, slug, title, overview, status, created_at, updated_at) VALUES (?,?,?,?,?,?,?)",
                (pid, f"plan-{i}", f"Plan {i}: {words}", f"Overview of {words} number {i}", rnd.choice(STATUSES), ts, ts),
            )
            files = rnd.sample(range(FILES), 3)
            conn.executemany("INSERT INTO plan_files(plan_id, file_path) VALUES (?, ?)",
                             [(pid, f"src/mod{f}.py") for f in files])
            conn.executemany(
                "INSERT INTO plan_tasks(plan_id, ord, description, agent, files, status) VALUES (?,?,?,?,?,?)",
                [(pid, k + 1, f"step {k} on {rnd.choice(WORDS)} for plan {i}", "smith-a" if i % 2 else "smith-b",
                  f'["src/mod{files[k % 3]}.py"]', "pending" if k >= 2 else rnd.choice(["done", "pending"]))
                 for k in range(TASKS_PER_PLAN)],
            )
    conn.close()


class Raw:
    """The floor: the same SQL on a plain synchronous sqlite3 connection."""

    def __init__(self, db: Path) -> None:
        self.c = sqlite3.connect(db, isolation_level=None)
        self.c.row_factory = sqlite3.Row
        self.c.execute("PRAGMA busy_timeout = 5000")

    def search(self, word: str) -> list:
        sql, params = search_sql(word, None, include_archived=False)  # the store's statement
        return self.c.execute(sql, (*params, 50)).fetchall()

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
                status = self.c.execute(PLAN_STARTED_SQL, (agent, None, now(), pid)).fetchone()["status"]
                steps = {"draft": ["approved", "executing"], "approved": ["executing"]}.get(status, [])
                for frm, to in zip([status] + steps, steps):
                    self.c.execute("SELECT * FROM plans WHERE id = ? OR slug = ?", (pid, pid)).fetchone()
                    self.c.execute("UPDATE plans SET status = ?, updated_at = ? WHERE id = ?", (to, now(), pid))
                    self.c.execute("INSERT INTO plan_audit(plan_id, at, actor, from_status, to_status, forced, reason)"
                                   " VALUES (?, ?, ?, ?, ?, 0, 'a task started')", (pid, now(), agent, frm, to))
            self.c.execute("COMMIT")
        except BaseException:
            self.c.execute("ROLLBACK")
            raise
        return row["id"] if row else None

    def by_file(self, path: str) -> list:
        sql, params = search_sql(None, path, include_archived=False)  # the store's statement
        return self.c.execute(sql, (*params, 50)).fetchall()


async def run() -> list[Result]:
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        db = root / ".ndomo" / "ndomo.db"
        store = await PlanStore.open(db, workspace=root)
        await store.close()
        t = time.perf_counter()
        await asyncio.to_thread(load, db)
        load_s = time.perf_counter() - t
        store = await PlanStore.open(db, workspace=root)
        raw = Raw(db)
        rnd = random.Random(11)
        cases = {
            "search (FTS, 1 word)": (lambda w: store.search_plans(w), raw.search, lambda: rnd.choice(WORDS)),
            "get (plan + 5 tasks)": (store.get_plan, raw.get, lambda: f"plan-{rnd.randrange(PLANS)}"),
            "progress": (store.plan_progress, raw.progress, lambda: f"plan-{rnd.randrange(PLANS)}"),
            "task claim (BEGIN IMMEDIATE)": (lambda _: store.next_task_for_agent("smith-a"), lambda _: raw.claim("smith-b"),
                                             lambda: None),
        }
        results = []
        try:
            for name, (mine, theirs, arg) in cases.items():
                ours, base = [], []
                for _ in range(N + 20):
                    a = arg()
                    t = time.perf_counter()
                    await mine(a)
                    ours.append(time.perf_counter() - t)
                    t = time.perf_counter()
                    theirs(a)
                    base.append(time.perf_counter() - t)
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
            results += _rows("diagnostics: plans by file ×1000", ours, base, total=True)
        finally:
            raw.c.close()
            await store.close()
        for r in results:
            r.extra["load_seconds"] = round(load_s, 1)
        return results


def _rows(name: str, ours: list[float], base: list[float], total: bool = False) -> list[Result]:
    o, b = summary(ours), summary(base)
    rows = [
        Result("store", f"{name} p95", o["p95"], b["p95"], "ms", "p95 ≤ 5 ms", o["p95"] <= 5.0),
        Result("store", f"{name} p95 vs raw", o["p95"], b["p95"], "ms", "≤ 2× raw", o["p95"] <= 2 * b["p95"]),
        Result("store", f"{name} p50", o["p50"], b["p50"], "ms", "report", True),
    ]
    if total:
        rows.append(Result("store", f"{name} total", sum(ours) * 1000, sum(base) * 1000, "ms", "report", True))
    return rows
