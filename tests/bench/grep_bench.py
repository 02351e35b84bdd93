"""The `grep` tool against the `rg` command on a generated 20,000-file tree, and grep's
peak memory on a 200 MB single-line file holding one match.

`rg` comes from the `ripgrep` PyPI wheel (`pip install ripgrep`: benchmark-only) or PATH.
The tool is called through the runtime's tool registry, as a model would call it.
"""

from __future__ import annotations

import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ndomo import compose
from ndomo.app import App
from ndomo.lib.search.grep import find_rg
from ndomo.lib.search.grep import grep as grep_fn
from ndomo.runtime.context import TurnContext, TurnRequest
from ndomo.runtime.host import BaseHost
from ndomo.runtime.runtime import Runtime
from tests.bench.common import Result

FILES = 20_000
ROUNDS = 5
PATTERNS = ["needle_[0-9]+", "def handle_request", "TODO\\(bench\\)"]


def make_tree(root: Path) -> None:
    rnd = random.Random(3)
    words = ["alpha", "beta", "gamma", "delta", "value", "result", "items", "config", "render"]
    for i in range(FILES):
        folder = root / f"pkg{i % 40}" / f"sub{i % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        lines = [
            f"{rnd.choice(words)} = {rnd.randint(0, 999)}  # {rnd.choice(words)}" for _ in range(30)
        ]
        if i % 97 == 0:
            lines.insert(5, f"needle_{i} = True")
        if i % 501 == 0:
            lines.insert(9, "def handle_request(req):")
        if i % 1999 == 0:
            lines.insert(2, "# TODO(bench) tidy")
        (folder / f"m{i}.py").write_text("\n".join(lines) + "\n")


def run_rg(rg: str, root: Path, pattern: str) -> int:
    proc = subprocess.run(
        [
            rg,
            "--line-number",
            "--no-heading",
            "--color",
            "never",
            "--max-count",
            "200",
            pattern,
            ".",
        ],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    return len(proc.stdout.splitlines())


LONG_LINE_BYTES = 200_000_000
LONG_LINE_NEEDLE = "LONG_LINE_NEEDLE"
# A fresh interpreter runs search.grep() and reports its own peak RSS and the peak of the
# processes it waited for (rg): their sum bounds what both held at once.
MEASURE = """
import json, resource, sys, time
from ndomo.lib.search import grep
t = time.perf_counter()
res = grep(sys.argv[1], sys.argv[2])
took = time.perf_counter() - t
self_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
rg_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({"s": took, "self": self_kib, "rg": rg_kib,
                  "found": [m.line for m in res.matches], "text": res.render()[-80:]}))
"""


def make_long_line(path: Path) -> None:
    piece = b"var a=1;function b(){return 2};" * 32768
    pieces = -(-LONG_LINE_BYTES // (2 * len(piece)))
    with open(path, "wb") as f:
        for _ in range(pieces):
            f.write(piece)
        f.write(LONG_LINE_NEEDLE.encode())
        for _ in range(pieces):
            f.write(piece)


def long_line_results(rg: str) -> list[Result]:
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        make_long_line(root / "bundle.min.js")
        out = subprocess.run(
            [sys.executable, "-c", MEASURE, str(root), LONG_LINE_NEEDLE],
            capture_output=True,
            text=True,
            check=True,
        )
        got = json.loads(out.stdout)
        base = subprocess.run(
            [sys.executable, "-c", BASE_RSS], capture_output=True, text=True, check=True
        )
        t = time.perf_counter()
        subprocess.run([rg, "--count", LONG_LINE_NEEDLE, "."], cwd=root, capture_output=True)
        rg_s = time.perf_counter() - t
    base_kib = int(base.stdout)
    found = got["found"] == [1]
    peak_mb = (got["self"] + got["rg"]) / 1024
    # Baselines: the interpreter with the library imported (RSS), `rg --count` (time).
    return [
        Result(
            "grep",
            "200 MB single line: peak RSS ndomo + rg",
            peak_mb,
            base_kib / 1024,
            "MB",
            "≤ 200 MB, match found",
            peak_mb <= 200 and found,
            {"self_kib": got["self"], "rg_kib": got["rg"], "found": got["found"]},
        ),
        Result(
            "grep",
            "200 MB single line: search time",
            got["s"] * 1000,
            rg_s * 1000,
            "ms",
            "≤ 5000 ms, match found",
            got["s"] <= 5 and found,
            {"tail": got["text"]},
        ),
    ]


BASE_RSS = (
    "import resource, ndomo.lib.search\nprint(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n"
)


async def run() -> list[Result]:
    rg = find_rg()
    if rg is None:
        raise RuntimeError("no rg: pip install ripgrep (benchmark-only) to run this benchmark")
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        make_tree(root)
        app = App(root)
        try:
            rt = Runtime(app, compose.plugins())
            state = await rt.session()
            ctx = TurnContext(
                app=app,
                runtime=rt,
                host=BaseHost(),
                request=TurnRequest(prompt="bench"),
                session=state,
                mode=state.mode,
                agent_name=state.agent,
            )
            ctx.agent = await rt.check_agent(state.agent)
            tools = rt.plugins.tools
            has_tool = tools.get("grep") is not None if hasattr(tools, "get") else False
            for p in PATTERNS:  # warm the page cache for both
                run_rg(rg, root, p)
            results = []
            for pattern in PATTERNS:
                t_tool, t_fn, t_rg = [], [], []
                for _ in range(ROUNDS):
                    t = time.perf_counter()
                    run_rg(rg, root, pattern)
                    t_rg.append(time.perf_counter() - t)
                    if has_tool:
                        t = time.perf_counter()
                        res = await tools.execute(ctx, "grep", {"pattern": pattern})
                        t_tool.append(time.perf_counter() - t)
                        if res.status != "done":
                            raise RuntimeError(f"grep tool failed: {res.content[:300]}")
                    t = time.perf_counter()
                    grep_fn(root, pattern)
                    t_fn.append(time.perf_counter() - t)
                base = statistics.median(t_rg) * 1000
                if t_tool:
                    mine = statistics.median(t_tool) * 1000
                    results.append(
                        Result(
                            "grep",
                            f"grep tool /{pattern}/ (median)",
                            mine,
                            base,
                            "ms",
                            "≤ 1.5× rg",
                            mine <= 1.5 * base,
                        )
                    )
                fn = statistics.median(t_fn) * 1000
                results.append(
                    Result(
                        "grep",
                        f"search.grep() /{pattern}/ (median)",
                        fn,
                        base,
                        "ms",
                        "report",
                        True,
                    )
                )
            py = []
            for _ in range(2):
                t = time.perf_counter()
                grep_fn(root, PATTERNS[0], engine="python")
                py.append(time.perf_counter() - t)
            results.append(
                Result(
                    "grep",
                    f"python fallback engine /{PATTERNS[0]}/",
                    min(py) * 1000,
                    statistics.median(t_rg) * 1000,
                    "ms",
                    "report (no rg)",
                    True,
                )
            )
        finally:
            await app.aclose()
    return results + long_line_results(rg)
