"""Shared bits: percentiles, a result row, the machine, and small process helpers.

Every figure is reported next to a baseline measured in the same run (the machine is
shared and noisy), and each benchmark returns rows of `Result`.
"""

from __future__ import annotations

import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


def pct(samples: list[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100) of seconds → milliseconds."""
    if not samples:
        return float("nan")
    s = sorted(samples)
    k = max(0, min(len(s) - 1, int(round(p / 100 * len(s) + 0.5)) - 1))
    return s[k] * 1000


def summary(samples: list[float]) -> dict[str, float]:
    return {
        "n": len(samples),
        "p50": pct(samples, 50),
        "p95": pct(samples, 95),
        "p99": pct(samples, 99),
        "mean": statistics.fmean(samples) * 1000 if samples else float("nan"),
    }


@dataclass
class Result:
    bench: str
    case: str
    value: float  # what is measured (ms, MB …)
    baseline: float  # the same measure of the reference, this run
    unit: str
    target: str  # human text of the target
    met: bool
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ratio(self) -> float:
        return self.value / self.baseline if self.baseline else float("inf")

    def line(self) -> str:
        flag = "met" if self.met else "MISSED"
        return (
            f"{self.bench:10} {self.case:46} {self.value:10.3f} {self.unit:4} vs {self.baseline:10.3f}"
            f"  ×{self.ratio:6.2f}  [{self.target}] {flag}"
        )


def machine() -> dict[str, Any]:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "cpu": cpu,
    }


def timed(fn: Callable[[], Any], n: int) -> list[float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


# The variables of the run itself, not a config: whether `ndomo run` hands its turns to a
# resident process, and where its socket lives (the suite turns it off, tests/conftest.py).
KEPT = ("NDOMO_RESIDENT", "NDOMO_RESIDENT_DIR", "NDOMO_RESIDENT_IDLE")


def without_config(environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """`environ` without ndomo's config variables (`NDOMO_*` but `KEPT`)."""
    return {k: v for k, v in environ.items() if not k.startswith("NDOMO_") or k in KEPT}


def env_for_server(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of an `ndomo` the bench spawns: no config of the caller's, the model
    a closed port unless `extra` says, and no resident process unless `extra` turns it on
    (the `run` rows do, in a folder of their own; none may outlive a bench)."""
    env = without_config()
    env.setdefault("NDOMO_RESIDENT", "0")
    env.setdefault("NDOMO_BASE_URL", "http://127.0.0.1:9/v1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH", "")]))
    env.update(extra or {})
    return env


def resident_up(folder: Path, timeout: float = 60.0) -> int:
    """The pid of the resident process in `folder` (`NDOMO_RESIDENT_DIR`) once it answers."""
    from ndomo.terminal.resident import server

    end = time.monotonic() + timeout
    while time.monotonic() < end:
        for lock in folder.glob("run-*.lock"):
            pid = server.running(str(lock))
            if pid is not None and list(folder.glob("run-*.sock")):
                return pid
        time.sleep(0.05)
    raise RuntimeError("the warm-up started no resident process")


def stop_resident(pid: int, env: dict[str, str]) -> None:
    """`ndomo resident --stop` with `env`; killed if it is still there after 10 s."""
    subprocess.run(
        [sys.executable, "-m", "ndomo", "resident", "--stop"], env=env, capture_output=True
    )
    end = time.monotonic() + 10
    while time.monotonic() < end:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)


def conditions() -> dict[str, Any]:
    """When and under what load: the load average (1, 5, 15 min) and the time, now."""
    return {
        "time": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "load": [round(x, 2) for x in os.getloadavg()],
    }


def dump(results: list[Result], path: Path | None, run: dict[str, Any] | None = None) -> None:
    """The rows and how the run went (`run`: names, scale, conditions at start and end,
    exit code) for `python -m tests.bench.report`."""
    if path is None:
        return
    rows = [asdict(r) | {"ratio": r.ratio} for r in results]
    path.write_text(json.dumps({"machine": machine(), "run": run or {}, "results": rows}, indent=2))
