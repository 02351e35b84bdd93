"""`python -m tests.bench.report RESULTS.json [MORE.json …]`: the "Results" section of
docs/performance.md, in markdown, from the JSON `python -m tests.bench --json` wrote —
the conditions of each run (machine, time, load average at start and end, exit code),
the results table and the paired ratios targets are judged on. Paste it over the section."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def _load(run: dict[str, Any]) -> str:
    def one(c: dict[str, Any] | None) -> str:
        return "/".join(f"{x:g}" for x in c["load"]) if c else "?"

    return f"{one(run.get('start'))} at start, {one(run.get('end'))} at the end"


def conditions(path: Path, data: dict[str, Any]) -> str:
    m, run = data.get("machine", {}), data.get("run", {})
    missed = [r for r in data["results"] if not r["met"]]
    failed = run.get("failed") or []
    names = " ".join(run.get("benchmarks") or []) or "?"
    scale = f" --scale {run['scale']}" if "store" in (run.get("benchmarks") or []) else ""
    when = (run.get("start") or {}).get("time", "?")
    outcome = (
        f"exited {run['exit']}" if "exit" in run else "exit code not recorded"
    ) + f" ({len(missed)} targets missed, {len(failed)} benchmarks failed to run)"
    injected = (
        f" **with --inject-delay {run['inject_delay_ms']:g} ms**"
        if run.get("inject_delay_ms")
        else ""
    )
    return (
        f"- `{path.name}`: `python -m tests.bench {names}{scale}`{injected}, {when}, "
        f"{m.get('cpus', '?')} × {m.get('cpu', '?')}, Python {m.get('python', '?')}, "
        f"{m.get('platform', '?')}; load average (1/5/15 min) {_load(run)}; {outcome}."
    )


def table(paths: list[Path]) -> str:
    lines = [
        "| benchmark | case | ndomo | baseline (same run) | ratio | target | |",
        "|---|---|---|---|---|---|---|",
    ]
    last = None
    for path in paths:
        for r in json.loads(path.read_text())["results"]:
            bench = r["bench"] if r["bench"] != last else ""
            last = r["bench"]
            flag = "met" if r["met"] else "**MISSED**"
            if r["target"] == "report":
                flag = ""
            unit = r["unit"]
            lines.append(
                f"| {bench} | {r['case']} | {r['value']:.2f} {unit} | {r['baseline']:.2f} {unit} "
                f"| {r['ratio']:.2f}× | {r['target']} | {flag} |"
            )
    return "\n".join(lines)


def paired(paths: list[Path]) -> list[str]:
    """Rows whose target is judged on the median of paired ratios (not the ratio of medians)."""
    out = []
    for path in paths:
        for r in json.loads(path.read_text())["results"]:
            ratio = (r.get("extra") or {}).get("paired_ratio_median")
            if ratio is not None and r["target"] != "report":
                out.append(f"- {r['bench']} · {r['case']}: median of the paired ratios {ratio:.2f}")
    return out


def report(paths: list[Path]) -> str:
    runs = [conditions(p, json.loads(p.read_text())) for p in paths]
    parts = ["**Runs:**", "", *runs, "", table(paths)]
    pairs = paired(paths)
    if pairs:
        parts += [
            "",
            "Targets judged on paired rounds (the table's ratio divides two medians):",
            "",
        ]
        parts += pairs
    return "\n".join(parts)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: python -m tests.bench.report RESULTS.json [MORE.json …]")
    print(report([Path(p) for p in sys.argv[1:]]))
