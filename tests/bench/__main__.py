"""Run the benchmarks by hand: `python -m tests.bench [NAME …] [--json FILE]` (default: all).

Names: lsp, startup, store, overhead, grep, memory, reqsize. See docs/performance.md.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import logging
import sys
import time
from pathlib import Path

from tests.bench.common import Result, dump, machine

BENCHES = {
    "lsp": "tests.bench.lsp_latency",
    "startup": "tests.bench.startup",
    "store": "tests.bench.store",
    "overhead": "tests.bench.overhead",
    "grep": "tests.bench.grep_bench",
    "memory": "tests.bench.memory",
    "reqsize": "tests.bench.request_size",
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench", description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", metavar="NAME", help="benchmarks to run (default: all)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)
    unknown = [n for n in args.names if n not in BENCHES]
    if unknown:
        parser.error(f"unknown benchmark(s) {', '.join(unknown)}; choose from {', '.join(BENCHES)}")
    logging.basicConfig(level=logging.ERROR)
    logging.getLogger("pygls").setLevel(logging.CRITICAL)
    print("machine:", machine())
    results: list[Result] = []
    failed = []
    for name in args.names or list(BENCHES):
        t = time.perf_counter()
        try:
            rows = asyncio.run(importlib.import_module(BENCHES[name]).run())
        except Exception as exc:  # one broken benchmark must not hide the others
            failed.append(name)
            print(f"{name}: FAILED: {type(exc).__name__}: {exc}", file=sys.stderr)
            continue
        for r in rows:
            print(r.line(), flush=True)
        print(f"# {name}: {time.perf_counter() - t:.0f} s", flush=True)
        results += rows
    dump(results, args.json)
    missed = [r for r in results if not r.met]
    print(f"{len(results) - len(missed)} met, {len(missed)} missed, {len(failed)} failed to run")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
