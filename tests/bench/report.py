"""`python -m tests.bench.report RESULTS.json [MORE.json …]`: the results table of
docs/performance.md, in markdown, from the JSON rows `python -m tests.bench --json` wrote."""

from __future__ import annotations

import json
import sys
from pathlib import Path


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


if __name__ == "__main__":
    print(table([Path(p) for p in sys.argv[1:]]))
