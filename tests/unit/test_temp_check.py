"""Under NDOMO_NO_SKIP=1 a test run that leaves anything in the temp folder fails
(tests/conftest.py), and a run that cleans up passes: a real nested pytest, with its own
temp folder and the suite's conftest as its plugin."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _run(tmp_path: Path, body: str) -> subprocess.CompletedProcess[str]:
    tests = tmp_path / "probe"
    tests.mkdir()
    (tests / "test_probe.py").write_text(body, encoding="utf-8")
    temp = tmp_path / "temp"
    temp.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "PYTEST_"))}
    env.update({"NDOMO_NO_SKIP": "1", "TMPDIR": str(temp)})
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "tests.conftest", "-c", os.devnull,
         "--rootdir", str(tests), "-p", "no:cacheprovider", str(tests)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_a_run_that_leaves_a_temp_folder_fails(tmp_path: Path) -> None:
    run = _run(
        tmp_path,
        "import tempfile\n\n\ndef test_leaks():\n    tempfile.mkdtemp(prefix='leak-probe-')\n",
    )
    assert run.returncode == 1, run.stdout + run.stderr
    assert "1 passed" in run.stdout
    assert "left in the temp folder by this run (1): leak-probe-" in run.stdout


def test_a_run_that_cleans_up_passes(tmp_path: Path) -> None:
    run = _run(
        tmp_path,
        "import tempfile\n\n\ndef test_tidy():\n    with tempfile.TemporaryDirectory():\n"
        "        pass\n",
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "left in the temp folder" not in run.stdout
