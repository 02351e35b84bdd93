"""The plan store at 10,000 plans / 50,000 tasks (`--scale 100k`: 100,000 / 500,000),
against the same queries on raw `sqlite3`.

Data is bulk-loaded with raw SQL into a schema made by the real migrations (the FTS and
updated_at triggers run). Each case runs the PlanStore call and its raw twin — the same
statements (imported from the store: `search_rows`, `list_sql`, `GET_PLAN_SQL`,
`PROGRESS_SQL`, `CLAIM_SQL`, `PLAN_STARTED_SQL`, …) on a plain synchronous sqlite3
connection with the store's PRAGMAs (`ndomo.store.db.PRAGMAS`: synchronous=NORMAL …) — in
the same loop iteration, the order alternating. Every answer is checked for content.

Before/after (`python -m tests.bench.store --baseline REF [--scale 10k|100k]`): the
`server/` tree of git REF is extracted with `git archive` into a temporary folder; two
worker processes (`tests/bench/store_worker.py`), one importing that tree's `ndomo` and one
the current tree's, each open their own copy of one loaded database and run the same
store calls. The current side opens (and so migrates) its copy once and closes it before
timing starts. Each round runs every case A-B then B-A, so each side takes each place once
(whichever side runs first after a pause is slower: up to 1.7× at 100 calls, which decided
the ratio when the rounds' count was odd); each row is the median over rounds of the paired
ratio current/baseline (target ≤ 1.1), so the shared machine's load moves both sides of a
pair alike.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ndomo.store.core import PLAN_ROW_SQL
from ndomo.store.db import PRAGMAS, now
from ndomo.store.plan_ops import (
    CHANGED_PLANS_SQL,
    GET_PLAN_SQL,
    PROGRESS_SQL,
    list_sql,
    search_rows,
)
from ndomo.store.store import PlanStore
from ndomo.store.task_ops import ANY_PENDING_SQL, CLAIM_SQL, PLAN_STARTED_SQL
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
            status = rnd.choice(STATUSES)
            conn.execute(
                "INSERT INTO plans(id, slug, title, overview, status, created_at, updated_at, archived_at)"
                " VALUES (?,?,?,?,?,?,?,?)",
                (
                    pid,
                    f"plan-{i}",
                    f"Plan {i}: {words}",
                    f"Overview of {words} number {i}",
                    status,
                    ts,
                    ts,
                    ts
                    if status == "abandoned"
                    else None,  # archived: "archived included" finds them
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

    def search(self, word: str | None, path: str | None = None, archived: bool = False) -> list:
        """The store's statements: the terms each word stands for, then the search (for
        text and a broad folder, the window of newest matches or the walk)."""
        return search_rows(self.c, word, path, archived, 50)

    def list(self, status: str | None, archived: bool = False) -> list:
        sql, params = list_sql(status, include_archived=archived)
        return self.c.execute(sql, (*params, 50)).fetchall()

    def tasks(self, plan_id: str) -> list:
        """The store's two statements: the plan by id or slug, then its tasks in order."""
        pid = self.c.execute(PLAN_ROW_SQL, (plan_id, plan_id)).fetchone()["id"]
        return self.c.execute(
            "SELECT * FROM plan_tasks WHERE plan_id = ? ORDER BY ord", (pid,)
        ).fetchall()

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
                for frm, to in zip([status] + steps, steps, strict=False):
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
        return self.search(None, path)


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
            "search (FTS, a word in every plan)": (
                lambda w: store.search_plans(w),
                raw.search,
                lambda: "overview",
            ),
            "search (FTS, numbers: plan N)": (
                lambda w: store.search_plans(w),
                raw.search,
                lambda: f"plan {rnd.randrange(plans)}",
            ),
            "search (text + file)": (
                lambda a: store.search_plans(a[0], file_path=a[1]),
                lambda a: raw.search(a[0], a[1]),
                lambda: (rnd.choice(WORDS), f"src/mod{rnd.randrange(FILES)}.py"),
            ),
            "search (a word in every plan + file)": (
                lambda a: store.search_plans(a[0], file_path=a[1]),
                lambda a: raw.search(a[0], a[1]),
                lambda: ("plan", f"src/mod{rnd.randrange(FILES)}.py"),
            ),
            "search (rare word + folder)": (
                lambda w: store.search_plans(w, file_path="src"),
                lambda w: raw.search(w, "src"),
                lambda: f"{rnd.randrange(plans)}",
            ),
            "search (text + folder)": (
                lambda w: store.search_plans(w, file_path="src"),
                lambda w: raw.search(w, "src"),
                lambda: rnd.choice(WORDS),
            ),
            "search (folder)": (
                lambda _: store.search_plans(file_path="src"),
                lambda _: raw.search(None, "src"),
                lambda: None,
            ),
            "search (FTS, 1 common word, archived included)": (
                lambda w: store.search_plans(w, include_archived=True),
                lambda w: raw.search(w, None, True),
                lambda: rnd.choice(WORDS),
            ),
            "list_plans, archived included": (
                lambda _: store.list_plans(include_archived=True),
                lambda _: raw.list(None, True),
                lambda: None,
            ),
            "list_plans(status=…), archived included": (
                lambda st: store.list_plans(st, include_archived=True),
                lambda st: raw.list(st, True),
                lambda: rnd.choice(["completed", "abandoned"]),
            ),
            "list_tasks (a plan's)": (
                lambda pid: store.list_tasks(pid),
                raw.tasks,
                lambda: f"p{rnd.randrange(plans):05d}",
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


# ------------------------------------------------------------ before/after, side by side

ROOT = Path(__file__).resolve().parents[2]
AB_TARGET = 1.1


def extract(ref: str, into: Path) -> Path:
    """`server/` of git `ref`, unpacked under `into`; returns the folder to put on PYTHONPATH."""
    tar = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", ref, "server/ndomo"],
        check=True,
        capture_output=True,
    ).stdout
    into.mkdir(parents=True, exist_ok=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=tar, check=True)
    return into / "server"


def _worker_cpu() -> int:
    """The one CPU both sides' workers run on (the last this process may use).

    Unpinned, a worker's loop and store threads land on the same core or on two, at random
    and for the process's life: a cross-core hop costs about twice a same-core one, so
    that luck, not the code, decided a small query's ratio (the same case measured 0.83×
    in one run and 1.42× in the next). Both sides pinned alike time the code.
    """
    return max(os.sched_getaffinity(0))


class Side:
    """A worker process running one tree's PlanStore on its own copy of the database."""

    def __init__(self, name: str, server: Path, db: Path) -> None:
        self.name = name
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(server), str(ROOT)])}
        if hasattr(os, "sched_getaffinity"):  # Linux; elsewhere both sides run unpinned
            env["NDOMO_BENCH_CPU"] = str(_worker_cpu())
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.bench.store_worker", str(db)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env=env,
        )
        hello = json.loads(self._line())
        self.tree = hello["ready"]
        if not self.tree.startswith(str(server)):
            raise RuntimeError(f"{name} side imported ndomo from {self.tree}, not {server}")

    def _line(self) -> str:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the {self.name} store worker died (exit {self.proc.wait()})")
        return line

    def run(self, case: str, n: int, seed: int, plans: int) -> list[float]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"case": case, "n": n, "seed": seed, "plans": plans}))
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()
        return json.loads(self._line())["t"]

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _make_db(server: Path, db: Path) -> None:
    """A fresh database made by `server`'s own migrations (the older schema opens in both)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(server), str(ROOT)])}
    code = (
        "import asyncio, pathlib, sys\n"
        "from ndomo.store.store import PlanStore\n"
        "async def main():\n"
        "    db = pathlib.Path(sys.argv[1])\n"
        "    await (await PlanStore.open(db, workspace=db.parent.parent)).close()\n"
        "asyncio.run(main())\n"
    )
    subprocess.run([sys.executable, "-c", code, str(db)], check=True, env=env, cwd=ROOT)


def compare(
    ref: str,
    plans: int = PLANS,
    rounds: int = 7,
    n: int = 100,
    only: str = "",
    loaded: Path | None = None,
) -> list[Result]:
    """Rows "<case> current/baseline": the median over rounds of the paired median ratio."""
    from tests.bench.store_worker import _cases

    names = [c for c in _cases() if only in c]
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        old_tree = extract(ref, tmp / "tree")
        new_tree = ROOT / "server"
        dbs = {}
        for name in ("baseline", "current"):
            dbs[name] = tmp / name / "ws" / ".ndomo" / "ndomo.db"
            dbs[name].parent.mkdir(parents=True)
        if loaded is None:
            _make_db(old_tree, dbs["baseline"])
            load(dbs["baseline"], plans)
        else:  # a database loaded earlier (at the baseline's schema, closed cleanly)
            shutil.copyfile(loaded, dbs["baseline"])
        shutil.copyfile(dbs["baseline"], dbs["current"])
        # The current tree migrates the copy when it first opens it (a newer schema may rebuild
        # indexes); do that now and close cleanly, so neither side's timing includes a freshly
        # migrated file's un-checkpointed WAL.
        _make_db(new_tree, dbs["current"])
        sides = [
            Side("baseline", old_tree, dbs["baseline"]),
            Side("current", new_tree, dbs["current"]),
        ]
        try:
            ratios: dict[str, list[float]] = {}
            medians: dict[str, dict[str, list[float]]] = {}
            for r in range(rounds + 1):  # round 0 warms both sides up and is dropped
                for k, case in enumerate(names):
                    # A-B then B-A: the side that runs first after a pause is measurably
                    # slower (up to 1.7× at n=100), so each side takes each place once a round
                    # and the order cannot decide the ratio.
                    order = sides if (r + k) % 2 == 0 else sides[::-1]
                    got: dict[str, list[float]] = {s.name: [] for s in sides}
                    for half, seq in enumerate((order, order[::-1])):
                        seed = 1000 * r + 100 * half + k
                        for s in seq:
                            got[s.name] += s.run(case, n, seed=seed, plans=plans)
                    if r == 0:
                        continue
                    old, new = (statistics.median(got[x]) for x in ("baseline", "current"))
                    ratios.setdefault(case, []).append(new / old)
                    for x in ("baseline", "current"):
                        medians.setdefault(case, {}).setdefault(x, []).append(
                            statistics.median(got[x])
                        )
        finally:
            for s in sides:
                s.close()
    rows = []
    for case, rs in ratios.items():
        ratio = statistics.median(rs)
        old = statistics.median(medians[case]["baseline"]) * 1000
        new = statistics.median(medians[case]["current"]) * 1000
        rows.append(
            Result(
                "store",
                f"[{plans // 1000}k] {case}: current vs {ref}",
                new,
                old,
                "ms",
                f"paired ×{ratio:.2f} ≤ {AB_TARGET}",
                ratio <= AB_TARGET,
                {"paired_ratios": [round(x, 3) for x in rs]},
            )
        )
    all_ratios = [statistics.median(rs) for rs in ratios.values()]
    geo = statistics.geometric_mean(all_ratios)
    rows.append(
        Result(
            "store",
            f"[{plans // 1000}k] all cases: geometric mean of paired ratios vs {ref}",
            geo,
            1.0,
            "×",
            f"≤ {AB_TARGET}",
            geo <= AB_TARGET,
        )
    )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.store")
    parser.add_argument("--baseline", required=True, help="git ref of the store to compare with")
    parser.add_argument("--scale", choices=["10k", "100k"], default="10k")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("-n", type=int, default=100, help="calls per case per round and side")
    parser.add_argument("--case", default="", help="only the cases whose name contains this")
    parser.add_argument(
        "--db", type=Path, help="reuse this loaded database (baseline schema) instead of loading"
    )
    args = parser.parse_args(argv)
    plans = {"10k": 10_000, "100k": 100_000}[args.scale]
    print("load:", os.getloadavg(), flush=True)
    rows = compare(args.baseline, plans, args.rounds, args.n, args.case, args.db)
    for row in rows:
        print(row.line(), flush=True)
    print("load:", os.getloadavg(), flush=True)
    return 0 if all(r.met for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
