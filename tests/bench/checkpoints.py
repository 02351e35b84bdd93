"""Checkpoints: what a snapshot of a 5,000-file workspace costs (features/checkpoints).

The workspace is a git repository with 2,500 committed files, 2,500 untracked ones and an
ignored folder; the shadow repository is in a throw-away data folder. Timed: a snapshot
when nothing changed (every turn start and end, every command: target ≤ 50 ms), and one
after a file changed. The reference is `git status --porcelain` on the user's repository,
the same walk a user's own tool makes.
"""

from __future__ import annotations

import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from ndomo.features.checkpoints.shadow import Shadow
from tests.bench.common import Result

FILES = 5_000
ROUNDS = 21
TARGET_MS = 50.0


def make_workspace(root: Path) -> None:
    for i in range(FILES):
        folder = root / f"pkg{i // 100:02d}"
        folder.mkdir(exist_ok=True)
        (folder / f"mod{i:04d}.py").write_text(f"# module {i}\nVALUE = {i}\n" * 20)
    (root / ".gitignore").write_text("build/\n")
    (root / "build").mkdir()
    for i in range(200):
        (root / "build" / f"out{i}.o").write_bytes(b"\0" * 1024)
    git = ["git", "-c", "user.email=b@example.com", "-c", "user.name=bench"]
    subprocess.run([*git, "init", "-q"], cwd=root, check=True)
    tracked = [str(p.relative_to(root)) for p in sorted(root.glob("pkg[0-2]*/*.py"))]
    tracked.append(".gitignore")
    subprocess.run([*git, "add", "--", *tracked], cwd=root, check=True)
    subprocess.run([*git, "commit", "-qm", "bench"], cwd=root, check=True)


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


async def run() -> list[Result]:
    with tempfile.TemporaryDirectory() as d:
        root = Path(d) / "ws"
        root.mkdir()
        make_workspace(root)
        shadow = Shadow(root, Path(d) / "data" / "checkpoints" / "ws")
        t = time.perf_counter()
        first = await shadow.snapshot()
        first_ms = (time.perf_counter() - t) * 1000
        same: list[float] = []
        for _ in range(ROUNDS):
            t = time.perf_counter()
            snap = await shadow.snapshot()
            same.append(time.perf_counter() - t)
            if snap.commit != first.commit:
                raise RuntimeError("a snapshot of an unchanged workspace is a new commit")
        changed: list[float] = []
        for i in range(ROUNDS):
            (root / "pkg00" / "mod0000.py").write_text(f"VALUE = {i}\n")
            t = time.perf_counter()
            await shadow.snapshot()
            changed.append(time.perf_counter() - t)
        status: list[float] = []
        for _ in range(ROUNDS):
            t = time.perf_counter()
            subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True)
            status.append(time.perf_counter() - t)
        base = _median_ms(status)
        unchanged = _median_ms(same)
        return [
            Result(
                "checkpoints",
                f"snapshot, {FILES} files, nothing changed (median)",
                unchanged,
                base,
                "ms",
                f"≤ {TARGET_MS:g} ms",
                unchanged <= TARGET_MS,
                {"first_snapshot_ms": round(first_ms, 1)},
            ),
            Result(
                "checkpoints",
                f"snapshot, {FILES} files, one changed (median)",
                _median_ms(changed),
                base,
                "ms",
                "reported",
                True,
            ),
        ]
