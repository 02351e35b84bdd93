"""Mode and agent names live in the server only: no editor source names a built-in one.

Editors build every mode and agent menu from what the server advertises (`initialize`'s
`experimental.ndomo`, `ndomo.catalog`). The built-in names are listed from the mode
registry and the agent loader, so a new built-in mode or agent is checked too.
"""

from __future__ import annotations

import re
from pathlib import Path

from ndomo import compose
from ndomo.agents.loader import load_agents
from ndomo.runtime.plugins import build_plugins

ROOT = Path(__file__).resolve().parents[3]
# The editors' sources and manifest (docs and the editors' own tests may name them).
SOURCES = ("editors/vscode/src/**/*.ts", "editors/vscode/package.json", "editors/nvim/lua/**/*.lua")


def builtin_names() -> list[str]:
    modes = build_plugins(compose.features()).modes  # the built-in features only
    return sorted(set(modes) | set(load_agents(None).names()))


def named(text: str, names: list[str]) -> list[tuple[int, str]]:
    """(line, name) for each name standing as a word (not inside `describe` or `go-smith`)."""
    pattern = re.compile(
        r"(?<![\w-])(" + "|".join(map(re.escape, names)) + r")(?![\w-])", re.IGNORECASE
    )
    return [
        (n, m.group(1))
        for n, line in enumerate(text.splitlines(), 1)
        for m in pattern.finditer(line)
    ]


def test_the_check_finds_a_name_and_only_a_name():
    names = ["craftsman", "autopilot", "smith", "scribe"]
    text = 'a = "craftsman"\nb = { "Autopilot" }\nc = "go-smith", describeStatus, smithy\n'
    assert named(text, names) == [(1, "craftsman"), (2, "Autopilot")]


def test_no_editor_source_names_a_builtin_mode_or_agent():
    names = builtin_names()
    assert {"discussion", "brainstorming", "autopilot", "foreman", "craftsman"} <= set(names)
    files = sorted(p for glob in SOURCES for p in ROOT.glob(glob))
    assert len(files) > 10, files  # the globs still find the sources
    hits = [
        f"{p.relative_to(ROOT)}:{line}: {name}"
        for p in files
        for line, name in named(p.read_text(encoding="utf-8"), names)
    ]
    assert hits == [], "mode/agent names belong to the server's catalog:\n" + "\n".join(hits)
