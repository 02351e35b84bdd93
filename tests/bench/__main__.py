"""Run the benchmarks: `python -m tests.bench [NAME …] [--scale 10k|100k] [--json FILE]`,
or the timing-free budgets: `python -m tests.bench --ci`; `--inject-delay MS` proves a
slowed path fails the run.

Names: turns, acp, lsp, startup, idle, diagnostics, store, overhead, grep, memory, reqsize, mcp,
run, checkpoints, llama (default: all; llama needs tests/llama/install-llama-server.sh). Exits
non-zero when a target is missed or a benchmark fails to run. See docs/performance.md for
each row's method.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import inspect
import logging
import sys
import time
from pathlib import Path

from tests.bench.common import Result, conditions, dump, machine

BENCHES = {
    "turns": "tests.bench.turns",
    "acp": "tests.bench.acp_turns",
    "lsp": "tests.bench.lsp_latency",
    "startup": "tests.bench.startup",
    "idle": "tests.bench.idle",
    "diagnostics": "tests.bench.diagnostics",
    "store": "tests.bench.store",
    "overhead": "tests.bench.overhead",
    "grep": "tests.bench.grep_bench",
    "memory": "tests.bench.memory",
    "reqsize": "tests.bench.request_size",
    "checkpoints": "tests.bench.checkpoints",
    "mcp": "tests.bench.mcp_calls",
    "run": "tests.bench.run_start",
    "llama": "tests.bench.llama_turns",
}
SCALES = {"10k": 10_000, "100k": 100_000}


def inject_delay(seconds: float) -> None:
    """Slow the timed paths down in this process only (the benchmark's own patch, never a
    switch in ndomo): a run with it must report MISSED and exit 1."""
    from ndomo.lsp import plan_diagnostics as pd
    from ndomo.runtime.coordinator import ToolCallCoordinator

    # the class whose `refresh` tests/bench/diagnostics.py times (one folder's plans)
    plans = getattr(pd, "FolderPlans", None) or pd.PlanDiagnosticsFeature

    def slowed(method):
        async def slow(*args, **kwargs):
            await asyncio.sleep(seconds)
            return await method(*args, **kwargs)

        return slow

    ToolCallCoordinator.run = slowed(ToolCallCoordinator.run)  # type: ignore[method-assign]
    plans.refresh = slowed(plans.refresh)  # type: ignore[method-assign]
    print(f"injected: +{seconds * 1000:g} ms per tool call and per diagnostics refresh")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.bench", description=__doc__.splitlines()[0]
    )
    parser.add_argument("names", nargs="*", metavar="NAME", help="benchmarks to run (default: all)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument(
        "--scale", choices=list(SCALES), default="10k", help="plans in the store benchmark"
    )
    parser.add_argument(
        "--ci", action="store_true", help="only the budgets that do not depend on timing"
    )
    parser.add_argument(
        "--inject-delay",
        type=float,
        metavar="MS",
        help="prove the run can fail: add MS of sleep to the paths the in-process benchmarks "
        "time (overhead: each tool call; diagnostics: each refresh); the run must exit 1",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)
    logging.getLogger("pygls").setLevel(logging.CRITICAL)
    if args.ci:
        from tests.bench.ci import run_ci

        return run_ci()
    unknown = [n for n in args.names if n not in BENCHES]
    if unknown:
        parser.error(f"unknown benchmark(s) {', '.join(unknown)}; choose from {', '.join(BENCHES)}")
    if args.inject_delay:
        inject_delay(args.inject_delay / 1000)
    names = args.names or list(BENCHES)
    start = conditions()
    print("machine:", machine(), "load:", start["load"])
    results: list[Result] = []
    failed = []
    for name in names:
        t = time.perf_counter()
        run = importlib.import_module(BENCHES[name]).run
        kwargs = (
            {"plans": SCALES[args.scale]} if "plans" in inspect.signature(run).parameters else {}
        )
        try:
            rows = asyncio.run(run(**kwargs))
        except Exception as exc:  # noqa: BLE001 - one broken benchmark must not hide the others (reported, exit 1)
            failed.append(name)
            print(f"{name}: FAILED: {type(exc).__name__}: {exc}", file=sys.stderr)
            continue
        for r in rows:
            print(r.line(), flush=True)
        print(f"# {name}: {time.perf_counter() - t:.0f} s", flush=True)
        results += rows
    missed = [r for r in results if not r.met]
    code = 1 if failed or missed else 0
    run_info = {
        "benchmarks": names,
        "scale": args.scale,
        "inject_delay_ms": args.inject_delay,
        "start": start,
        "end": conditions(),
        "failed": failed,
        "exit": code,
    }
    dump(results, args.json, run_info)
    print(f"{len(results) - len(missed)} met, {len(missed)} missed, {len(failed)} failed to run")
    for r in missed:
        print(f"MISSED: {r.bench} {r.case}: {r.value:.3f} {r.unit} [{r.target}]", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
