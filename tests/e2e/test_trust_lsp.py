"""Workspace trust over LSP: `ndomo.trust.get` / `ndomo.trust.set`, the status payload, the
initialize result, and VS Code's Restricted Mode (`workspaceTrusted: false`), against the
real `ndomo serve` with the user's data and config directories inside the test's folder."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.e2e.conftest import command
from tests.e2e.editor_support import wait_for

HELPER = "---\ndescription: a project helper\nmode: primary\n---\nHelp with this project.\n"


def _workspace(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    ws = tmp_path / "ws"
    agents = ws / ".ndomo" / "agents"
    agents.mkdir(parents=True)
    (agents / "helper.md").write_text(HELPER)
    (ws / "AGENTS.md").write_text("Always answer in French.\n")
    env = {
        "HOME": str(tmp_path / "home"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
    }
    (tmp_path / "home").mkdir()
    return ws, env


def _plain(params) -> dict:
    return params if isinstance(params, dict) else params._asdict()


async def _agent_names(client) -> list[str]:
    listed = await command(client, "ndomo.agents.list", {})
    return [a["name"] for a in listed["agents"]]


async def test_trust_get_set_apply_live_and_persist(lsp, tmp_path: Path) -> None:
    ws, env = _workspace(tmp_path)
    statuses: list = []
    client = await lsp.start(
        ws, env=env, handlers={"ndomo/status": lambda p: statuses.append(_plain(p))}
    )
    assert client.init_result.capabilities.experimental["ndomo"]["trust"] == "unknown"
    got = await command(client, "ndomo.trust.get", {})
    assert got["root"] == os.path.realpath(ws) and got["state"] == "unknown"
    assert "agent helper (new): .ndomo/agents/helper.md" in got["configures"]
    assert "instructions: AGENTS.md" in got["configures"]
    assert "helper" not in await _agent_names(client)  # not loaded until trusted
    await wait_for(lambda: any(s.get("trust") == "unknown" for s in statuses), what="status")

    answer = await command(client, "ndomo.trust.set", {"trusted": True, "uri": ws.as_uri()})
    assert answer["state"] == "trusted"
    assert "helper" in await _agent_names(client)  # the folder was reloaded: applies now
    assert (await command(client, "ndomo.trust.get", {}))["state"] == "trusted"
    await wait_for(lambda: any(s.get("trust") == "trusted" for s in statuses), what="status")
    record = json.loads((tmp_path / "data" / "ndomo" / "trust.json").read_text())
    assert record["workspaces"][os.path.realpath(ws)]["state"] == "trusted"

    again = await lsp.start(ws, env=env)  # a restart: the answer is remembered
    assert (await command(again, "ndomo.trust.get", {}))["state"] == "trusted"
    assert "helper" in await _agent_names(again)

    answer = await command(again, "ndomo.trust.set", {"trusted": False})
    assert answer["state"] == "untrusted"
    assert "helper" not in await _agent_names(again)


async def test_restricted_mode_is_untrusted_whatever_the_record(lsp, tmp_path: Path) -> None:
    ws, env = _workspace(tmp_path)
    first = await lsp.start(ws, env=env)
    await command(first, "ndomo.trust.set", {"trusted": True})
    client = await lsp.start(ws, env=env, init_options={"workspaceTrusted": False})
    assert client.init_result.capabilities.experimental["ndomo"]["trust"] == "untrusted"
    got = await command(client, "ndomo.trust.get", {})
    assert got["state"] == "untrusted" and "Restricted Mode" in got["note"]
    assert "helper" not in await _agent_names(client)
    report = await command(client, "ndomo.health", {"probe_model": False})
    assert report["config"]["problems"] == []  # `workspaceTrusted` is not a config key
    assert report["trust"]["state"] == "untrusted"
