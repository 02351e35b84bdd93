"""Inputs that must neither exhaust nor hang a turn, attacked through `ndomo run`.

Each test runs the real CLI against the scripted model (tests/fakes/fake_model.py) and
real files and processes (rg, FIFOs), and reads what the model was sent back.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

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
    """`ndomo run` in its own process group; a hang fails the test and leaves no process."""
    args = [sys.executable, "-m", "ndomo", "run", "--workspace", str(workspace), *extra, prompt]
    proc = subprocess.Popen(
        [sys.executable, "-c", PEAK, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=server_env({"NDOMO_BASE_URL": fake.url}),
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"ndomo run hung for {timeout} s; output so far: {out[-2000:]}")
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


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


def test_read_of_a_fifo_is_refused_without_blocking_and_the_turn_goes_on(tmp_path):
    os.mkfifo(tmp_path / "pipe")
    calls = [
        {"name": "read", "arguments": {"path": "pipe"}},
        {"name": "edit", "arguments": {"path": "pipe", "old_text": "a", "new_text": "b"}},
        {"name": "grep", "arguments": {"pattern": "x", "path": "pipe"}},
    ]
    script = [*({"tool_calls": [c]} for c in calls), {"text": "carried on"}]
    with FakeModel(script=script) as fake:
        out = run(tmp_path, fake, "--mode", "autopilot", "--agent", "craftsman", timeout=30)
        assert out.returncode == 0, out.stdout + out.stderr
        results = tool_messages(fake.chat_requests()[-1])
    assert "carried on" in out.stdout
    assert len(results) == 3
    for text in results:
        assert "pipe is not a regular file (a FIFO)" in text, text


def test_nul_in_a_path_is_a_tool_error_and_the_turn_goes_on(tmp_path):
    calls = [
        {"name": "read", "arguments": {"path": "a\x00b"}},
        {"name": "write", "arguments": {"path": "x\x00.py", "content": "1"}},
        {"name": "grep", "arguments": {"pattern": "x", "path": "a\x00b"}},
        {"name": "glob", "arguments": {"pattern": "*\x00"}},
        {
            "name": "apply_patch",
            "arguments": {"patch": "--- /dev/null\n+++ b/n\x00.py\n@@ -0,0 +1 @@\n+x\n"},
        },
    ]
    script = [*({"tool_calls": [c]} for c in calls), {"text": "carried on"}]
    with FakeModel(script=script) as fake:
        out = run(tmp_path, fake, "--mode", "autopilot", "--agent", "craftsman", timeout=30)
        assert out.returncode == 0, out.stdout + out.stderr
        results = tool_messages(fake.chat_requests()[-1])
    assert "carried on" in out.stdout and "embedded null byte" not in out.stdout
    assert len(results) == 5
    for text in results:
        assert "NUL" in text, text


def assert_valid_conversation(messages: list[dict]) -> None:
    """What strict servers check: each tool message answers a call of the assistant
    message before it, and every call is answered."""
    open_calls: set[str] = set()
    for m in messages:
        if m["role"] == "tool":
            assert m["tool_call_id"] in open_calls, f"tool message without its call: {m}"
            open_calls.discard(m["tool_call_id"])
            continue
        assert not open_calls, f"calls left unanswered: {open_calls}"
        open_calls = {c["id"] for c in m.get("tool_calls") or []}
    assert not open_calls


def test_a_lone_surrogate_is_a_tool_error_and_the_session_stays_valid(tmp_path):
    # Valid JSON whose string is not encodable text; the fake sends the arguments verbatim.
    raw = '{"path": "a.txt", "content": "x\\ud800y"}'
    script = [
        {"tool_calls": [{"name": "write", "arguments": raw}]},
        {"text": "tried"},
        {"text": "second turn answered"},
    ]
    with FakeModel(script=script) as fake:
        first = run(tmp_path, fake, "--mode", "autopilot", "--agent", "craftsman", "--yes")
        assert first.returncode == 0, first.stdout + first.stderr
        second = run(tmp_path, fake, "--mode", "autopilot", "--agent", "craftsman", "--yes")
        assert second.returncode == 0, second.stdout + second.stderr
        requests = fake.chat_requests()
    result = tool_messages(requests[1])[0]
    assert "lone surrogate" in result and "content" in result, result
    assert not (tmp_path / "a.txt").exists()
    assert "second turn answered" in second.stdout
    history = requests[2]["body"]["messages"]
    assert any(m["role"] == "tool" and "lone surrogate" in m["content"] for m in history)
    assert_valid_conversation(history)
