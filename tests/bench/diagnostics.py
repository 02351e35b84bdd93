"""Plan diagnostics refresh at 1,000 open plans (3 tasks each, 1,000 files).

The real feature (`FolderPlans.refresh`, one folder's plans) on a real App and store, publishing to
a recording stand-in for the language server. A round is what one tool call costs it:
- "nothing changed": a tool call that wrote nothing (one index read, no plan re-read);
- "one task changed": a task status update, then the refresh (one plan re-read, its view
  rewritten, two uris republished).
Also the first (full) refresh, reported. Each figure: the median of ROUNDS rounds; every
round's result is checked (diagnostics published for the changed task, nothing else).
"""

from __future__ import annotations

import sqlite3
import statistics
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace

from tests.bench.common import Result

OPEN_PLANS = 1_000
ROUNDS = 25
TARGET_MS = 20.0


class _Server:
    closing = False

    def __init__(self) -> None:
        self.published: dict[str, list] = {}
        self.sent = 0
        self.workspace = SimpleNamespace(text_documents={})  # no view open in an editor

    def text_document_publish_diagnostics(self, params) -> None:
        self.published[params.uri] = params.diagnostics
        self.sent += 1


async def _load(store) -> None:
    ts = "2001-01-01T00:00:00.000Z"
    plans = [
        (f"open{i:05d}", f"open-{i}", f"Open plan {i}", "o", ts, ts) for i in range(OPEN_PLANS)
    ]
    await store._exec("BEGIN")
    await store._db.call(
        sqlite3.Connection.executemany,
        "INSERT INTO plans(id, slug, title, overview, status, created_at, updated_at) VALUES (?,?,?,?,'executing',?,?)",
        plans,
    )
    await store._db.call(
        sqlite3.Connection.executemany,
        "INSERT INTO plan_tasks(plan_id, ord, description, files, agent) VALUES (?, ?, ?, ?, 'smith')",
        [
            (p[0], k, f"step {k} of {p[2]}", f'["src/f{(i * 3 + k) % 1000}.py"]')
            for i, p in enumerate(plans)
            for k in range(1, 4)
        ],
    )
    await store._exec("COMMIT")


async def run() -> list[Result]:
    from ndomo import compose
    from ndomo.app import App
    from ndomo.lsp import plan_diagnostics as pd

    compose.actions()  # wired as the server is: a refresh's runtime gets the features
    pd.SETTLE = timedelta(0)  # the bench's plans are all "old"; a young one is re-read once more
    with tempfile.TemporaryDirectory() as d:
        app = App(Path(d))
        try:
            store = await app.store()
            await _load(store)
            feat = pd.FolderPlans(_Server())
            t = time.perf_counter()
            await feat.refresh(app)
            first = (time.perf_counter() - t) * 1000
            if len(feat.plans) != OPEN_PLANS:
                raise RuntimeError(f"{len(feat.plans)} plans with diagnostics, not {OPEN_PLANS}")
            tids = [t.id for e in feat.plans.values() for t in e.tasks.values()]
            idle, changed = [], []
            for i in range(ROUNDS):
                read0, sent0 = feat.reread, feat.server.sent
                t = time.perf_counter()
                await feat.refresh(app)
                idle.append((time.perf_counter() - t) * 1000)
                if feat.reread != read0 or feat.server.sent != sent0:
                    raise RuntimeError("a refresh with nothing changed re-read or republished")
                tid = tids[(i * 37) % len(tids)]
                t = time.perf_counter()
                await store.update_task_status(tid, "failed" if i % 2 == 0 else "done")
                await feat.refresh(app)
                changed.append((time.perf_counter() - t) * 1000)
                if feat.reread - read0 != 1 or feat.server.sent - sent0 != 2:
                    raise RuntimeError(
                        f"one changed task: {feat.reread - read0} plans re-read, "
                        f"{feat.server.sent - sent0} uris republished (want 1, 2)"
                    )
        finally:
            await app.aclose()
    a, b = statistics.median(idle), statistics.median(changed)
    return [
        Result(
            "diagnostics",
            f"refresh after a tool call, nothing changed ({OPEN_PLANS} open plans)",
            a,
            TARGET_MS,
            "ms",
            f"≤ {TARGET_MS:.0f} ms",
            a <= TARGET_MS,
            {"all_ms": [round(x, 2) for x in idle]},
        ),
        Result(
            "diagnostics",
            f"task update + refresh ({OPEN_PLANS} open plans)",
            b,
            TARGET_MS,
            "ms",
            f"≤ {TARGET_MS:.0f} ms",
            b <= TARGET_MS,
            {"all_ms": [round(x, 2) for x in changed]},
        ),
        Result(
            "diagnostics",
            f"first full refresh ({OPEN_PLANS} open plans)",
            first,
            TARGET_MS,
            "ms",
            "report",
            True,
        ),
    ]
