""".ci/run can fail: every gate on its own line, and its lint gates fail on a broken copy.

Under `set -e` bash ignores a failure inside `a && b && c` unless it is the last command:
that is how a ruff error once reached main with a green run. These tests keep each gate
on a line of its own and run the script's own lint lines against a copy of the tree with
one lint error, then one type error.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CI = ROOT / ".ci" / "run"
LINT_TOOLS = ("ruff", "mypy")


def script_lines(text: str) -> list[str]:
    """The commands of a script: comments and blank lines dropped."""
    return [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("#")]


def chained(text: str) -> list[str]:
    """Lines that run one command after another with `&&` or `||` (a gate hidden inside)."""
    return [ln for ln in script_lines(text) if re.search(r"&&|\|\|", ln)]


def lint_gates(text: str) -> list[str]:
    return [ln for ln in script_lines(text) if ln.split()[0] in LINT_TOOLS]


def test_every_gate_on_its_own_line() -> None:
    text = CI.read_text()
    assert text.startswith("#!/usr/bin/env bash")
    assert "set -euo pipefail" in script_lines(text)
    assert chained(text) == []
    assert {ln.split()[0] for ln in lint_gates(text)} == set(LINT_TOOLS)
    assert "python -m pytest" in script_lines(text)


def test_the_chain_check_sees_a_chained_gate() -> None:
    bad = "set -euo pipefail\npip install x && ruff check server && mypy\n"
    assert chained(bad) == ["pip install x && ruff check server && mypy"]
    assert chained("set -e\n# a && b in a comment\nruff check\n") == []


def _copy_tree(dest: Path) -> None:
    shutil.copytree(ROOT / "server", dest / "server", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "tests", dest / "tests", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", dest / "pyproject.toml")
    cache = ROOT / ".mypy_cache"
    if cache.is_dir():  # a warm cache keeps the type gate's run short; it changes no verdict
        shutil.copytree(cache, dest / ".mypy_cache")


def _run_gates(tree: Path) -> subprocess.CompletedProcess[str]:
    body = "\n".join(["set -euo pipefail", *lint_gates(CI.read_text()), "echo ALL-GATES-PASSED"])
    bindir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": bindir + os.pathsep + os.environ.get("PATH", "")}
    return subprocess.run(
        ["bash", "-c", body], cwd=tree, env=env, capture_output=True, text=True, timeout=600
    )


def _have_lint_tools() -> bool:
    bindir = Path(sys.executable).parent
    return all(shutil.which(tool, path=str(bindir)) or shutil.which(tool) for tool in LINT_TOOLS)


needs_lint = pytest.mark.skipif(not _have_lint_tools(), reason="ruff and mypy (the lint extra)")


@needs_lint
def test_lint_gate_fails_on_a_lint_error(tmp_path: Path) -> None:
    _copy_tree(tmp_path)
    target = tmp_path / "server" / "ndomo" / "filetypes.py"
    target.write_text("import os  # unused: F401\n" + target.read_text())
    done = _run_gates(tmp_path)
    assert done.returncode != 0
    assert "ALL-GATES-PASSED" not in done.stdout
    assert "F401" in done.stdout + done.stderr


@needs_lint
def test_lint_gate_fails_on_a_type_error(tmp_path: Path) -> None:
    _copy_tree(tmp_path)
    target = tmp_path / "server" / "ndomo" / "filetypes.py"
    target.write_text(target.read_text() + '\n\nWRONG: int = "not a number"\n')
    done = _run_gates(tmp_path)
    assert done.returncode != 0
    assert "ALL-GATES-PASSED" not in done.stdout
    assert "Incompatible types in assignment" in done.stdout + done.stderr


@needs_lint
def test_lint_gates_pass_on_the_tree_as_it_is(tmp_path: Path) -> None:
    _copy_tree(tmp_path)
    done = _run_gates(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ALL-GATES-PASSED" in done.stdout
