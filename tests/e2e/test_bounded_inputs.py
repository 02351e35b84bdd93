"""Inputs that must neither exhaust nor hang a turn, attacked through `ndomo run`.

Each test runs the real CLI against the scripted model (tests/fakes/fake_model.py) and
real files and processes (rg, FIFOs), and reads what the model was sent back.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.e2e.conftest import server_env
from tests.fakes.fake_model import FakeModel

# Runs a command and prints the largest peak RSS (KiB) among the processes it waited for:
# ndomo itself and, through ndomo's waits, rg.
PEAK = (
    "import resource, subprocess, sys\n"
    "p = subprocess.run(sys.argv[1:])\n"
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)\n"
    "sys.exit(p.returncode)\n"
)


def run(workspace: Path, fake: FakeModel, *extra: str, prompt: str = "go", timeout: float = 120):
    args = [sys.executable, "-m", "ndomo", "run", "--workspace", str(workspace), *extra, prompt]
    return subprocess.run(
        [sys.executable, "-c", PEAK, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=server_env({"NDOMO_BASE_URL": fake.url}),
    )


def tool_messages(request: dict) -> list[str]:
    return [m["content"] for m in request["body"]["messages"] if m["role"] == "tool"]


def test_grep_on_a_20mb_single_line_bundle_stays_small_and_finds_the_match(tmp_path):
    chunk = "var a=1;function b(){return 2};" * 1000
    with open(tmp_path / "bundle.min.js", "w") as f:
        for _ in range(340):  # ~10 MB each side of the match, one line
            f.write(chunk)
        f.write("window.SECRET_HOOK=1;")
        for _ in range(340):
            f.write(chunk)
    script = [
        {"tool_calls": [{"name": "grep", "arguments": {"pattern": "SECRET_HOOK"}}]},
        {"text": "found it"},
    ]
    with FakeModel(script=script) as fake:
        out = run(tmp_path, fake)
        assert out.returncode == 0, out.stderr
        peak_kib = int(out.stderr.strip().splitlines()[-1])
        result = tool_messages(fake.chat_requests()[1])[0]
    assert "bundle.min.js" in result and "SECRET_HOOK" in result
    assert "line cut: 21," in result  # the cut is said, with the line's length
    # Before the bound, the JSON event of the whole line cost ndomo 1.8 GB here.
    assert peak_kib < 250 * 1024, f"peak RSS {peak_kib} KiB"
