"""The wheel users install carries the agent definitions, and the loader finds them there."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_wheel_contains_agent_definitions(tmp_path):
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "build",
            "--wheel",
            "--no-isolation",
            "--outdir",
            str(tmp_path),
            str(ROOT),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    wheel = next(tmp_path.glob("ndomo-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = {p.name for p in (ROOT / "agents").glob("*.md")}
    assert {"foreman.md", "craftsman.md"} <= shipped and len(shipped) == 16
    assert {f"ndomo/_agents/{n}" for n in shipped} <= names
    assert "ndomo/terminal/cli.py" in names and "ndomo/store/store.py" in names
