"""MCP server sources and approvals (tools/mcp/sources.py) with real files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ndomo.app import App
from ndomo.config import McpServerConfig, Settings
from ndomo.tools.mcp.catalog import tool_kind, tool_name
from ndomo.tools.mcp.sources import (
    NDOMO_PROJECT,
    PROJECT_FILE,
    USER,
    ServerSpec,
    approval,
    approve,
    discover,
    read_project_file,
    revoke,
)
from ndomo.trust import TrustView, configures

CLAUDE = {
    "mcpServers": {
        "files": {
            "command": "npx",
            "args": ["-y", "server-filesystem", "."],
            "env": {"A_TOKEN": "x"},
        },
        "remote": {
            "type": "http",
            "url": "https://example.invalid/mcp",
            "headers": {"Authorization": "Bearer ${TOK}"},
        },
        "old": {"type": "sse", "url": "https://example.invalid/sse"},
        "bad name!": {"command": "x"},
    }
}


def test_claude_codes_shape_is_read(tmp_path: Path) -> None:
    (tmp_path / PROJECT_FILE).write_text(json.dumps(CLAUDE))
    servers, problems = read_project_file(tmp_path)
    assert servers["files"].command == "npx" and servers["files"].env == {"A_TOKEN": "x"}
    assert servers["remote"].type == "http" and servers["remote"].headers
    assert set(servers) == {"files", "remote"}
    assert any("SSE" in p for p in problems) and any("bad name!" in p for p in problems)


def _app(root: Path, trusted: bool, settings: Settings | None = None) -> App:
    state = "trusted" if trusted else "untrusted"
    return App(root, settings, trust=TrustView(root=str(root), state=state))


def test_a_project_file_is_read_only_when_trusted(tmp_path: Path) -> None:
    (tmp_path / PROJECT_FILE).write_text(json.dumps(CLAUDE))
    mine = Settings.model_validate({"mcp": {"servers": {"files": {"command": "mine"}}}})
    specs, _ = discover(_app(tmp_path, False, mine))
    assert [(s.name, s.source) for s in specs] == [("files", USER)]
    specs, _ = discover(_app(tmp_path, True, mine))
    by = {s.name: s for s in specs}
    assert by["files"].source == USER and by["files"].config.command == "mine"  # yours wins
    assert by["remote"].source == PROJECT_FILE


def test_a_project_config_server_is_the_projects(tmp_path: Path) -> None:
    (tmp_path / ".ndomo").mkdir()
    (tmp_path / ".ndomo" / "config.yaml").write_text("mcp:\n  servers:\n    t:\n      command: x\n")
    merged = Settings.model_validate({"mcp": {"servers": {"t": {"command": "x"}}}})
    specs, _ = discover(_app(tmp_path, True, merged))
    assert specs[0].source == NDOMO_PROJECT and specs[0].project
    assert any("MCP server t" in line and "x" in line for line in configures(tmp_path))


def test_an_approval_is_bound_to_the_exact_definition(tmp_path: Path) -> None:
    spec = ServerSpec("s", PROJECT_FILE, McpServerConfig(command="run-me", args=["--a"]))
    assert approval(tmp_path, spec) is None
    approve(tmp_path, spec, read_only=True)
    found = approval(tmp_path, spec)
    assert found is not None and found.read_only and "run-me --a" in found.shown
    changed = ServerSpec("s", PROJECT_FILE, McpServerConfig(command="run-me", args=["--b"]))
    assert approval(tmp_path, changed) is None
    other_env = ServerSpec(
        "s", PROJECT_FILE, McpServerConfig(command="run-me", args=["--a"], env={"K": "v"})
    )
    assert approval(tmp_path, other_env) is None
    assert approval(tmp_path / "elsewhere", spec) is None  # per workspace
    assert revoke(tmp_path, "s") and approval(tmp_path, spec) is None
    assert not revoke(tmp_path, "s")


class _Ann:
    def __init__(self, ro: bool | None) -> None:
        self.read_only_hint = ro


class _Tool:
    def __init__(self, ro: bool | None) -> None:
        self.annotations = _Ann(ro)


@pytest.mark.parametrize(
    ("config", "hint", "user_read_only", "kind"),
    [
        ({"command": "x"}, True, True, "read"),
        ({"command": "x"}, True, False, "external"),  # the server's claim alone is not enough
        ({"command": "x"}, False, True, "external"),
        ({"command": "x"}, None, True, "external"),
        ({"command": "x", "network": "allow"}, True, True, "network"),
        ({"type": "http", "url": "https://example.invalid"}, True, True, "network"),
    ],
)
def test_the_fence_class(config: dict, hint: bool | None, user_read_only: bool, kind: str) -> None:
    spec = ServerSpec("s", USER, McpServerConfig.model_validate(config))
    assert tool_kind(spec, _Tool(hint), user_read_only) == kind  # type: ignore[arg-type]


def test_tool_names_are_safe_for_every_provider() -> None:
    assert tool_name("git", "git.status") == "mcp__git__git_status"
    assert len(tool_name("s", "x" * 100)) == 64
