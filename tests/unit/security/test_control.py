"""Control files at any depth: what the file tools ask about and what shell commands may
not write (the sandbox's real runs: test_sandbox_attacks.py)."""

from __future__ import annotations

import pytest

from ndomo.security.control import control_kind, shell_read_only, warning


@pytest.mark.parametrize(
    ("rel", "kind"),
    [
        (".ndomo/config.yaml", "agent_config"),
        ("pkg/.ndomo/config.yaml", "agent_config"),
        ("a/b/.ndomo/agents/craftsman.md", "agent_config"),
        ("pkg/.ndomo/ndomo.db", "denied"),
        ("pkg/.ndomo/plans/x.md", "denied"),  # only the root's plan views are the store's
        (".ndomo/plans/x.md", "plan_view"),
        ("pkg/.git/config", "denied"),
        ("pkg/.git", "denied"),  # a pointer file
        (".vscode/settings.json", "agent_config"),
        ("apps/web/.vscode/settings.json", "agent_config"),
        (".idea/workspace.xml", "agent_config"),
        ("pkg/.envrc", "agent_config"),
        (".mcp.json", "agent_config"),
        (".venv/bin/ndomo", "agent_config"),
        ("tools/venv/bin/ndomo", "agent_config"),
        (".venv/bin/python", None),
        ("src/vscode.py", None),
        ("docs/envrc.md", None),
    ],
)
def test_control_kind_at_any_depth(rel: str, kind: str | None) -> None:
    assert control_kind(rel) == kind


@pytest.mark.parametrize(
    "rel",
    [
        "pkg/.git/commondir",
        "pkg/.git/hooks/pre-commit",
        ".git",
        "pkg/.ndomo/agents/x.md",
        "a/.vscode/tasks.json",
        ".envrc",
        "x/.mcp.json",
        "venv/bin/ndomo",
    ],
)
def test_shell_may_not_write_control_files(rel: str) -> None:
    assert shell_read_only(rel)


@pytest.mark.parametrize("rel", [".git/objects/ab/cd", ".git/index", "src/app.py", ".venv/bin/pip"])
def test_shell_may_write_the_rest(rel: str) -> None:
    assert not shell_read_only(rel)


def test_warnings_name_what_the_file_controls() -> None:
    assert "ndomo.server.command" in warning(".vscode/settings.json")
    assert "project in pkg" in warning("pkg/.ndomo/config.yaml")
