"""One source of mode and agent names: a throwaway mode (a plugin's `setup(plugins)`) and a
throwaway agent file show up in the initialize result, `ndomo.catalog`, and the CLI's
choices — with no other change."""

from __future__ import annotations

import json
import subprocess
import sys

from tests import throwaway
from tests.e2e.conftest import command
from tests.trusting import trust


def names(entries: list[dict]) -> list[str]:
    return [e["name"] for e in entries]


async def test_initialize_and_catalog_advertise_the_throwaway_mode_and_agent(lsp, tmp_path):
    (tmp_path / ".git").mkdir()
    throwaway.add_agent(tmp_path)
    trust(tmp_path)  # the project agent applies in a folder the user trusted
    client = await lsp.start(tmp_path, env={"PYTHONPATH": str(throwaway.PLUGIN_PATH)})
    advertised = client.init_result.capabilities.experimental["ndomo"]
    modes, agents = advertised["modes"], advertised["agents"]
    assert names(modes)[:3] == ["discussion", "brainstorming", "autopilot"]
    assert throwaway.MODE in names(modes)
    sketch = next(m for m in modes if m["name"] == throwaway.MODE)
    assert sketch["description"] == throwaway.MODE_SUMMARY and sketch["default"] is False
    assert [m["name"] for m in modes if m["default"]] == ["discussion"]
    tinker = next(a for a in agents if a["name"] == throwaway.AGENT)
    assert tinker["description"] == throwaway.AGENT_DESCRIPTION
    assert tinker["primary"] is True and tinker["default_mode"] == throwaway.MODE
    assert [a["name"] for a in agents if a["default"]] == ["foreman"]
    assert {a["name"]: a["role"] for a in agents if a["role"]} == {
        "foreman": "planner",
        "craftsman": "builder",
    }
    # the action returns the same lists
    fresh = await command(client, "ndomo.catalog", {})
    assert fresh["modes"] == modes and fresh["agents"] == agents and fresh["problems"] == []
    # and the session switches to both
    status = await command(client, "ndomo.agent.set", {"agent": throwaway.AGENT})
    assert (status["agent"], status["mode"]) == (throwaway.AGENT, throwaway.MODE)


async def test_an_agent_file_added_after_start_is_offered_and_taken(lsp, tmp_path):
    (tmp_path / ".git").mkdir()
    trust(tmp_path)  # a folder's own agent files are offered once the user trusts it
    client = await lsp.start(tmp_path)
    advertised = client.init_result.capabilities.experimental["ndomo"]
    assert throwaway.MODE not in names(advertised["modes"])  # only the plugin brings it
    assert throwaway.AGENT not in names(advertised["agents"])
    await command(client, "ndomo.agent.set", {"agent": "foreman"})  # the agents are loaded
    throwaway.add_agent(tmp_path, default_mode=None)
    fresh = await command(client, "ndomo.catalog", {})
    assert throwaway.AGENT in names(fresh["agents"])
    # what a menu offers, the session takes (the agents are read again for a new name)
    status = await command(client, "ndomo.agent.set", {"agent": throwaway.AGENT})
    assert status["agent"] == throwaway.AGENT
    # an agent whose default mode nobody registered is refused, with the modes there are
    throwaway.add_agent(tmp_path)
    listed = await command(client, "ndomo.agents.list", {})
    assert throwaway.AGENT not in [a["name"] for a in listed["agents"]]
    assert any("unknown mode 'sketching'" in p["message"] for p in listed["problems"])


def cli(*args: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ndomo", *args],
        cwd=cwd,
        env=throwaway.env(),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_cli_choices_list_and_accept_the_throwaway_mode_and_agent(tmp_path):
    (tmp_path / ".git").mkdir()
    throwaway.add_agent(tmp_path)
    trust(tmp_path)  # the project agent applies in a folder the user trusted
    out = cli("catalog", "--json", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    cat = json.loads(out.stdout)
    assert throwaway.MODE in names(cat["modes"]) and throwaway.AGENT in names(cat["agents"])
    text = cli("catalog", cwd=tmp_path).stdout
    assert throwaway.MODE_SUMMARY in text and throwaway.AGENT in text

    usage = cli("run", "--help", cwd=tmp_path).stdout
    assert throwaway.MODE in usage and throwaway.AGENT in usage
    bad = cli("run", "hi", "--mode", "nope", cwd=tmp_path)
    assert bad.returncode == 2 and throwaway.MODE in bad.stderr
    bad = cli("run", "hi", "--agent", "nope", cwd=tmp_path)
    assert bad.returncode == 2 and throwaway.AGENT in bad.stderr
    # accepted: a slash command runs without a model; /mode reports the registered modes
    ok = cli(
        "run",
        "/mode",
        "--mode",
        throwaway.MODE,
        "--agent",
        throwaway.AGENT,
        "--json",
        cwd=tmp_path,
    )
    assert ok.returncode == 0, ok.stderr
    assert throwaway.MODE in json.loads(ok.stdout)["payload"]["modes"]
