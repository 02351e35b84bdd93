"""The `grep` tool against the `rg` command on a generated 20,000-file tree.

`rg` comes from the `ripgrep` PyPI wheel (`pip install ripgrep`: benchmark-only) or PATH.
The tool is called through the runtime's tool registry, as a model would call it.
"""

from __future__ import annotations

import random
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

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


async def run() -> list[Result]:
    rg = find_rg()
    if rg is None:
        raise RuntimeError("no rg: pip install ripgrep (benchmark-only) to run this benchmark")
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        make_tree(root)
        app = App(root)
        try:
            rt = Runtime(app)
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
    return results
