"""A turn with a tool call, headless (`ndomo run`) and through LSP; slash commands skip the model."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest

from tests.e2e.conftest import command, server_env
from tests.fakes.fake_model import FakeModel

SCRIPT = [
    {"tool_calls": [{"name": "read", "arguments": {"path": "notes.txt"}}]},
    {"text": "notes.txt says: buy milk", "chunks": 3},
]


@pytest.fixture
def fake():
    with FakeModel(script=list(SCRIPT)) as fm:
        yield fm


def tool_results(request):
    return [m["content"] for m in request["body"]["messages"] if m["role"] == "tool"]


def test_ndomo_run_performs_a_tool_call_and_prints_the_answer(tmp_path, fake):
    (tmp_path / "notes.txt").write_text("buy milk\n")
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "ndomo",
            "run",
            "--workspace",
            str(tmp_path),
            "what do my notes say?",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=server_env({"NDOMO_BASE_URL": fake.url}),
    )
    assert out.returncode == 0, out.stderr
    assert "→ read(path='notes.txt')" in out.stdout
    assert "notes.txt says: buy milk" in out.stdout
    assert "buy milk" in tool_results(fake.chat_requests()[1])[0]


def test_ndomo_run_reports_an_unreachable_model(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "ndomo", "run", "--workspace", str(tmp_path), "hi"],
        capture_output=True,
        text=True,
        timeout=60,
        env=server_env({"NDOMO_BASE_URL": "http://127.0.0.1:9/v1"}),
    )
    assert out.returncode == 1
    assert "http://127.0.0.1:9/v1 is unreachable" in out.stdout + out.stderr


async def test_turn_through_lsp_performs_a_tool_call(lsp, tmp_path, fake):
    (tmp_path / "notes.txt").write_text("buy milk\n")
    client = await lsp.start(
        tmp_path, env={"NDOMO_BASE_URL": fake.url}, init_options={"open_transcript": False}
    )
    summary = await command(client, "ndomo.turn", {"prompt": "what do my notes say?"})
    assert summary["status"] == "done" and summary["answer"] == "notes.txt says: buy milk"
    assert "buy milk" in tool_results(fake.chat_requests()[1])[0]


async def test_slash_mode_through_lsp_switches_without_a_model_call(lsp, tmp_path, fake):
    statuses: list[dict] = []

    def on_status(params):
        statuses.append(params if isinstance(params, dict) else params._asdict())

    client = await lsp.start(
        tmp_path, env={"NDOMO_BASE_URL": fake.url}, handlers={"ndomo/status": on_status}
    )
    summary = await command(client, "ndomo.turn", {"prompt": "/mode brainstorming"})
    assert summary["status"] == "done" and summary["payload"] == {"mode": "brainstorming"}
    for _ in range(100):
        if any(s["mode"] == "brainstorming" and s["busy"] is False for s in statuses):
            break
        await asyncio.sleep(0.05)
    assert any(s["mode"] == "brainstorming" and s["busy"] is False for s in statuses), statuses
    assert fake.chat_requests() == []
    report = await command(client, "ndomo.mode.get", {})
    assert report["mode"] == "brainstorming"


@pytest.mark.parametrize("yes", [False, True])
def test_ndomo_run_denies_asks_unless_yes(tmp_path, yes):
    script = [
        {"tool_calls": [{"name": "bash", "arguments": {"command": "echo hello-from-shell"}}]},
        {"text": "finished"},
    ]
    with FakeModel(script=script) as fake:
        args = [
            sys.executable,
            "-m",
            "ndomo",
            "run",
            "--workspace",
            str(tmp_path),
            "--agent",
            "craftsman",
            "--mode",
            "autopilot",
            "say hello",
        ]
        if yes:
            args.insert(-1, "--yes")
        out = subprocess.run(
            args,
            capture_output=True,
            text=True,
            timeout=60,
            env=server_env({"NDOMO_BASE_URL": fake.url}),
            stdin=subprocess.DEVNULL,
        )
        assert out.returncode == 0, out.stderr
        result = tool_results(fake.chat_requests()[1])[0]
    if yes:
        assert "hello-from-shell" in result
    else:
        assert "did not approve bash 'echo hello-from-shell'" in result


def test_ndomo_run_yes_does_not_approve_a_control_file(tmp_path):
    """--yes approves ordinary asks; an agent file needs the user's own answer."""
    script = [
        {
            "tool_calls": [
                {
                    "name": "write",
                    "arguments": {
                        "path": ".ndomo/agents/craftsman.md",
                        "content": "---\ndescription: x\n---\nbash: allow\n",
                    },
                }
            ]
        },
        {"text": "finished"},
    ]
    with FakeModel(script=script) as fake:
        args = [
            sys.executable,
            "-m",
            "ndomo",
            "run",
            "--workspace",
            str(tmp_path),
            "--yes",
            "--agent",
            "craftsman",
            "--mode",
            "autopilot",
            "widen yourself",
        ]
        out = subprocess.run(
            args,
            capture_output=True,
            text=True,
            timeout=60,
            env=server_env({"NDOMO_BASE_URL": fake.url}),
            stdin=subprocess.DEVNULL,
        )
        assert out.returncode == 0, out.stderr
        result = tool_results(fake.chat_requests()[1])[0]
    assert "did not approve control '.ndomo/agents/craftsman.md'" in result, result
    assert not (tmp_path / ".ndomo/agents/craftsman.md").exists()
