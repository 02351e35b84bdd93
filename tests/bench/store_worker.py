"""One side of the store's before/after benchmark (`python -m tests.bench.store --baseline REF`).

Run as a subprocess with `PYTHONPATH` pointing at one `server/` tree (the current one, or a
baseline extracted with `git archive`), so `ndomo` is whichever store that tree has. Uses
only `PlanStore`'s public methods, which both versions share. Reads one JSON request per
line on stdin (`{"case": name, "n": count, "seed": int}`), answers `{"t": [seconds, …]}`:
each call timed alone, every answer checked for content.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

WORDS = ("parser", "cache", "router", "schema", "token", "widget", "ledger", "socket")
FILES = 1_000

Case = Callable[[object, random.Random, int], Awaitable[object]]


def _cases() -> dict[str, tuple[Case, bool]]:
    """name → (one call, whether an empty answer is an error)."""
    return {
        "search (FTS, 1 common word)": (lambda s, r, n: s.search_plans(r.choice(WORDS)), True),
        # a rare word (or plan N) may name only an archived plan (an abandoned one): nothing
        "search (FTS, 1 rare word)": (lambda s, r, n: s.search_plans(f"{r.randrange(n)}"), False),
        "search (FTS, a word in every plan)": (lambda s, r, n: s.search_plans("overview"), True),
        "search (FTS, numbers: plan N)": (
            lambda s, r, n: s.search_plans(f"plan {r.randrange(n)}"),
            False,
        ),
        "search (text + file)": (
            lambda s, r, n: s.search_plans(r.choice(WORDS), file_path=_file(r)),
            False,
        ),
        "search (a word in every plan + file)": (
            lambda s, r, n: s.search_plans("plan", file_path=_file(r)),
            True,
        ),
        "search (text + folder)": (
            lambda s, r, n: s.search_plans(r.choice(WORDS), file_path="src"),
            True,
        ),
        "search (folder)": (lambda s, r, n: s.search_plans(file_path="src"), True),
        "list_plans (newest 50)": (lambda s, r, n: s.list_plans(), True),
        "list_plans(status=…)": (
            lambda s, r, n: s.list_plans(r.choice(["draft", "approved", "executing"])),
            True,
        ),
        "get (plan + 5 tasks)": (lambda s, r, n: s.get_plan(f"plan-{r.randrange(n)}"), True),
        "progress": (lambda s, r, n: s.plan_progress(f"plan-{r.randrange(n)}"), True),
        "task claim (BEGIN IMMEDIATE)": (lambda s, r, n: s.next_task_for_agent("smith-a"), True),
        "task claim, nothing pending": (lambda s, r, n: s.next_task_for_agent("nobody"), False),
        "plans by file": (
            lambda s, r, n: s.search_plans(file_path=f"src/mod{r.randrange(FILES)}.py"),
            False,
        ),
        "turn start + finish (writes)": (_turn, True),
    }


def _file(rnd: random.Random) -> str:
    return f"src/mod{rnd.randrange(FILES)}.py"


async def _turn(store, rnd: random.Random, plans: int) -> object:
    turn = await store.start_turn("bench", "craftsman", "autopilot", "hi")
    return await store.finish_turn(turn.id, "done", tokens_in=1)


async def serve(db: Path) -> None:
    import ndomo
    from ndomo.store.store import PlanStore

    store = await PlanStore.open(db, workspace=db.parent.parent)
    cases = _cases()
    loop = asyncio.get_running_loop()
    print(json.dumps({"ready": str(Path(ndomo.__file__).parent)}), flush=True)
    try:
        while line := await loop.run_in_executor(None, sys.stdin.readline):
            req = json.loads(line)
            call, needs_answer = cases[req["case"]]
            rnd = random.Random(req["seed"])
            times = []
            for _ in range(req["n"]):
                t = time.perf_counter()
                got = await call(store, rnd, req["plans"])
                times.append(time.perf_counter() - t)
                if needs_answer and not got:
                    raise RuntimeError(f"{req['case']!r} answered nothing")
            print(json.dumps({"t": times}), flush=True)
    finally:
        await store.close()


if __name__ == "__main__":
    if cpu := os.environ.get("NDOMO_BENCH_CPU"):
        # Before any thread starts, so the store's thread and the loop share the core.
        os.sched_setaffinity(0, {int(cpu)})
    asyncio.run(serve(Path(sys.argv[1])))
