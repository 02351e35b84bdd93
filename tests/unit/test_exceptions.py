"""docs/architecture.md, "Exceptions": an `except Exception` is a boundary that says why on
its line (`# noqa: BLE001 - reason`). ruff's BLE001 lets a handler that logs the error pass
without one, so this test holds the rest of the promise."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "server" / "ndomo"
BLIND = re.compile(r"^\s*except\s*\(?\s*Exception\b")
REASON = re.compile(r"#\s*noqa: BLE001\s*[-—–]\s*\S")

# Lines in modules other helpers of issue 23 are rewriting (runtime/tools.py, agents/scope.py:
# "effects"; lsp/warmup.py: "compose"; app.py: the composition root), left to them so the
# merges do not collide. Exactly these may still lack the reason; empty this once they have it.
PENDING: Counter[tuple[str, str]] = Counter()  # every blind except says why


def unexplained(src: Path = SRC) -> Counter[tuple[str, str]]:
    found: Counter[tuple[str, str]] = Counter()
    for path in sorted(src.rglob("*.py")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if BLIND.match(line) and not REASON.search(line):
                found[(path.relative_to(src).as_posix(), line.strip())] += 1
    return found


def test_every_blind_except_says_why():
    assert unexplained() == PENDING


def test_the_check_finds_a_blind_except_without_a_reason(tmp_path):
    (tmp_path / "a.py").write_text(
        "try:\n    pass\nexcept Exception:  # a comment, not a reason\n    pass\n"
        "try:\n    pass\nexcept Exception:  # noqa: BLE001 - a boundary\n    pass\n",
        encoding="utf-8",
    )
    assert unexplained(tmp_path) == Counter(
        [("a.py", "except Exception:  # a comment, not a reason")]
    )
