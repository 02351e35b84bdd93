"""Budgets that do not depend on timing noise, for CI (`python -m tests.bench --ci`).

- idle: a settled `ndomo serve` is woken 0 times over a few seconds (a count);
- query plans: every statement the store runs during a workload that touches each of its
  operations is traced (`set_trace_callback`) and its `EXPLAIN QUERY PLAN` must not scan
  the plans or plan_tasks table without an index, nor read the search index's vocabulary
  without a term to start from;
- request bytes: a turn's first model request per agent and mode stays under 10,000 B.

Each budget returns a list of problems; any problem makes the run exit 1.
"""

from __future__ import annotations

import asyncio
import re
import sqlite3
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

Budget = Callable[[], Awaitable[list[str]]]

IDLE_WINDOW_S = 4.0
BIG_TABLES = ("plans", "plan_tasks")
VOCAB = "plan_search_terms"  # fts5vocab: without a term constraint it reads the whole index


async def idle_wakeups() -> list[str]:
    from tests.bench.idle import measure

    got = await measure(IDLE_WINDOW_S)
    w, cpu = got["ndomo"]
    return [] if w == 0 else [f"idle server woken {w} times in {IDLE_WINDOW_S:.0f} s (budget 0)"]


async def _workload(store) -> None:
    """One call of every store operation that reads or writes plans and tasks."""
    from ndomo.store.models import PlanCreate

    a = await store.create_plan(
        PlanCreate(
            title="Parser cache", overview="speed up the parser", files=["src/p.py"], tags=["perf"]
        )
    )
    b = await store.create_plan(PlanCreate(title="Router", overview="routes", files=["src/r.py"]))
    await store.create_tasks(
        a.id,
        [
            {"description": "cache tokens", "files": ["src/p.py"], "agent": "smith"},
            {"description": "bench it", "agent": "smith"},
        ],
    )
    await store.create_tasks(b.id, [{"description": "route", "agent": "other"}])
    # text under a broad folder, the newest matches first: the window holds the newest
    # match (d); b, created just before it and updated after it, is tested by reading the
    # matches below the window, then a, created further back, by a probe
    await store.create_plan(PlanCreate(title="Parser router", overview="both", files=["src/q.py"]))
    for plan, word in ((b, "router"), (a, "parser")):
        await asyncio.sleep(0.01)  # the update stamps a later millisecond than d's creation
        await store.create_tasks(plan.id, [{"description": f"{word} again", "agent": "smith"}])
        found = await store.search_plans(word, file_path="src", limit=1)
        if [p.id for p in found] != [plan.id]:
            raise RuntimeError(
                f"{word} under a folder: {[p.title for p in found]}, not {plan.title}"
            )
    for status in (None, "draft", "approved", "executing", "completed"):
        await store.list_plans(status)
        await store.list_plans(status, include_archived=True)
    await store.search_plans("parser")
    await store.search_plans("parser", include_archived=True)
    await store.search_plans(file_path="src/p.py")
    await store.search_plans(file_path="src")
    await store.search_plans("cache", file_path="src/p.py")
    await store.search_plans("parser cache", file_path="src", include_archived=True)
    await store.get_plan(a.slug)
    await store.plan_progress(a.id)
    await store.peek_task_for_agent("smith")
    await store.next_task_for_agent("nobody")
    t = await store.next_task_for_agent("smith")
    await store.next_task_for_agent("smith", plan_id=a.id)
    await store.update_task_status(t.id, "done", result="ok")
    await store.list_tasks(a.id)
    await store.list_tasks(a.id, status="pending")
    await store.plan_changes(None)
    await store.plan_changes("2000-01-01T00:00:00.000Z")
    c = await store.create_plan(PlanCreate(title="Empty", overview="nothing to do"))
    await store.update_plan_status(c.id, "abandoned")
    await store.delete_plan(c.id, confirm=True)
    await store.update_plan_status(b.id, "abandoned")
    await store.archive_pending()


def _names(sql: str) -> dict[str, str]:
    """alias → table for the big tables named in a statement."""
    out = {}
    for m in re.finditer(r"\b(?:FROM|JOIN|UPDATE|INTO)\s+(\w+)(?:\s+(?:AS\s+)?(\w+))?", sql, re.I):
        table, alias = m.group(1), m.group(2)
        if table in BIG_TABLES:
            out[table] = table
            if alias and alias.upper() not in (
                "WHERE",
                "SET",
                "INDEXED",
                "ON",
                "ORDER",
                "LIMIT",
                "VALUES",
                "CROSS",
                "JOIN",
                "LEFT",
                "INNER",
                "GROUP",
                "USING",
            ):
                out[alias] = table
    return out


async def query_plans() -> list[str]:
    from ndomo.store.store import PlanStore

    seen: list[str] = []
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        store = await PlanStore.open(root / ".ndomo" / "ndomo.db", workspace=root)
        try:
            from ndomo.store import plan_ops

            # the workload's folder "src" (2 files) takes the broad folder's plan, its
            # files (1 each) the narrow one, and text under "src" the walk of the plans
            # matching both: every statement is explained
            # (and the window of newest matches is one plan per result, so the search of
            # "parser" under "src" with limit 1 runs each of its statements)
            broad, plan_ops.BROAD_FILES = plan_ops.BROAD_FILES, 2
            many, plan_ops.BROAD_MATCHES = plan_ops.BROAD_MATCHES, 1
            window = plan_ops.NEWEST_WINDOW, plan_ops.WINDOW_PER_LIMIT
            plan_ops.NEWEST_WINDOW, plan_ops.WINDOW_PER_LIMIT = 1, 1
            try:
                await store.trace(seen.append)
                await _workload(store)
                await store.trace(None)
            finally:
                plan_ops.BROAD_FILES, plan_ops.BROAD_MATCHES = broad, many
                plan_ops.NEWEST_WINDOW, plan_ops.WINDOW_PER_LIMIT = window
            statements = sorted(
                {
                    s.strip()
                    for s in seen
                    if re.match(r"\s*(SELECT|UPDATE|DELETE|INSERT|WITH)\b", s, re.I)
                }
            )
            problems = []
            for sql in statements:
                try:
                    rows = await store._all("EXPLAIN QUERY PLAN " + sql)
                except sqlite3.Error as exc:
                    problems.append(f"cannot explain {sql[:120]!r}: {exc}")
                    continue
                aliases = _names(sql)
                for row in rows:
                    detail = row[3]
                    if detail.startswith(f"SCAN {VOCAB} VIRTUAL TABLE INDEX 0:"):
                        problems.append(f"every term of the search index read: {detail} in {sql}")
                    m = re.match(r"SCAN (\w+)(?: VIRTUAL TABLE)?(.*)$", detail)
                    if m and m.group(1) in aliases and "USING" not in m.group(2):
                        problems.append(
                            f"full scan of {aliases[m.group(1)]}: {detail} in {' '.join(sql.split())[:200]}"
                        )
            term_sql = plan_ops.TERM_SQL.split("?")[0]  # traced with its value in place
            if not any(s.startswith(term_sql) for s in statements):  # "parser": its terms
                problems.append("the search's term lookup did not run: it was not explained")
            # the window's path ran: its window, the stretch below it and a probe
            for sql in (plan_ops.WINDOW_SQL, plan_ops.RANGE_SQL, plan_ops.PROBE_SQL):
                shape = re.compile(".+".join(re.escape(p) for p in sql.split("?")), re.S)
                if not any(shape.fullmatch(s) for s in statements):
                    problems.append(f"not explained, the workload did not run it: {sql}")
            if len(statements) < 20:
                problems.append(
                    f"only {len(statements)} statements traced: the workload did not run"
                )
            return problems
        finally:
            await store.close()


async def request_bytes() -> list[str]:
    """A turn's first model request per agent and mode (the whole JSON body as sent) stays
    under the budget: the prompt and schemas cannot grow unnoticed."""
    from tests.bench.request_size import CASES, TARGET, measure

    rows = await measure()
    problems = [
        f"{r['agent']} · {r['mode']}: first request {r['total']:,} B (budget < {TARGET:,} B; "
        f"tools {r['tools']:,} B, system prompt {r['system']:,} B)"
        for r in rows
        if r["total"] >= TARGET
    ]
    if len(rows) != len(CASES):
        problems.append(f"measured {len(rows)} of {len(CASES)} agent/mode cases")
    return problems


# Timing-free budgets: each returns its problems (none: within budget).
BUDGETS: dict[str, Budget] = {
    "query plans use indexes": query_plans,
    "idle wake-ups": idle_wakeups,
    "request bytes per agent/mode": request_bytes,
}


def run_ci() -> int:
    failed = 0
    for name, budget in BUDGETS.items():
        t = time.perf_counter()
        try:
            problems = asyncio.run(budget())
        except Exception as exc:  # noqa: BLE001 - a crashing budget is a failed budget, reported with the others
            problems = [f"{type(exc).__name__}: {exc}"]
        status = "ok" if not problems else "FAILED"
        print(f"ci budget: {name}: {status} ({time.perf_counter() - t:.1f} s)", flush=True)
        for p in problems:
            print(f"  {p}", file=sys.stderr)
        failed += bool(problems)
    return 1 if failed else 0
