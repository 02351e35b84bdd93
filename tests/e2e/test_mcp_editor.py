"""Issue 27 [mcp]: an MCP server's prompt as a slash command in an editor's `ndomo.turn`,
through the real `ndomo serve` and a real LSP client (pytest-lsp), the probe server
(tests/fakes/mcp_probe.py) given in the editor's settings."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.e2e.conftest import command
from tests.fakes.fake_model import FakeModel

PROBE = str(Path(__file__).resolve().parents[1] / "fakes" / "mcp_probe.py")


async def test_a_prompt_command_in_an_editor_turn(lsp, tmp_path):
    servers = {"probe": {"command": sys.executable, "args": [PROBE]}}
    with FakeModel(script=[{"text": "reviewed"}]) as fake:
        client = await lsp.start(
            tmp_path,
            env={"NDOMO_BASE_URL": fake.url},
            init_options={"open_transcript": False, "mcp": {"servers": servers}},
        )
        done = await command(
            client, "ndomo.turn", {"prompt": "/mcp__probe__review topic='the editor'"}
        )
        assert done["status"] == "done" and done["answer"] == "reviewed", done
        (asked,) = fake.chat_requests()
        users = [m for m in asked["body"]["messages"] if m["role"] == "user"]
        assert users[-1]["content"] == "Review the editor in a plain tone. (probe prompt)"

        missing = await command(client, "ndomo.turn", {"prompt": "/mcp__probe__review"})
        assert missing["status"] == "failed"
        assert "missing argument topic" in missing["error"]
        helped = await command(client, "ndomo.turn", {"prompt": "/help"})
        shown = [c["command"] for c in helped["payload"]["commands"]]
        assert "/mcp__probe__review" in shown
        assert len(fake.chat_requests()) == 1
