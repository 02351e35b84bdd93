"""Loader: overrides, additions, and malformed files reported with path and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from ndomo.agents import loader
from ndomo.agents.loader import (
    AgentSet,
    builtin_agents_dir,
    load_agents,
    load_agents_async,
    parse_agent_text,
)

MODES = ("discussion", "brainstorming", "autopilot")

GOOD = """---
description: A project helper
mode: subagent
temperature: 0.5
permission:
  edit: deny
  bash:
    "*": ask
    "make test*": allow
  task: deny
---
Do the thing.
"""


def write(ws: Path, name: str, text: str) -> Path:
    folder = ws / ".ndomo" / "agents"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.md"
    path.write_text(text, encoding="utf-8")
    return path


def problems_for(agents: AgentSet, path: Path):
    return [p for p in agents.problems if p.path == str(path)]


def test_project_agent_is_added(tmp_path):
    write(tmp_path, "helper", GOOD)
    agents = load_agents(tmp_path)
    helper = agents.get("helper")
    assert helper is not None
    assert helper.prompt == "Do the thing."
    assert helper.permission.bash == {"*": "ask", "make test*": "allow"}
    assert helper.permission.task == {"*": "deny"}  # bare action = {"*": action}
    assert helper.source.endswith("helper.md")
    assert len(agents.agents) == 17
    assert agents.problems == []


def test_override_replaces_builtin(tmp_path):
    path = write(tmp_path, "scout", GOOD.replace("A project helper", "Our own scout"))
    agents = load_agents(tmp_path)
    scout = agents.get("scout")
    assert scout.description == "Our own scout"
    assert scout.mode == "subagent"
    assert scout.source == str(path)
    assert len(agents.agents) == 16


def test_workspace_without_overrides_gives_builtins(tmp_path):
    agents = load_agents(tmp_path)
    assert len(agents.agents) == 16 and agents.problems == []


@pytest.mark.parametrize(
    "text, line, fragment",
    [
        # bad YAML: the unclosed flow sequence is reported where the parser gave up
        ("---\ndescription: ok\nmode: [primary\n---\nbody\n", None, "invalid YAML"),
        (
            "---\ndescription: ok\nmodel: x\ntemperture: 0.3\n---\nbody\n",
            3,
            "unknown key 'temperture'",
        ),
        (
            "---\ndescription: ok\npermission:\n  edit: allow\n  bash: perhaps\n---\nbody\n",
            4,
            "permission.bash",
        ),
        (
            "---\ndescription: ok\npermission:\n  bash:\n    'ls*': allow\n    'rm *': nope\n---\nbody\n",
            5,
            "'nope'",
        ),
        (
            "---\ndescription: ok\npermission:\n  task:\n    scout: sure\n---\nbody\n",
            4,
            "permission.task.scout",
        ),
        ("---\ndescription: ok\npermission:\n  edit: yes\n---\nbody\n", 3, "true/false"),
        ("---\ndescription: ok\nmode: boss\n---\nbody\n", 2, "mode"),
        ("---\ndescription: ok\ndefault_mode: yolo\n---\nbody\n", 2, "default_mode"),
        ("---\ndescription: ok\ntemperature: 7\n---\nbody\n", 2, "temperature"),
        (
            "---\ndescription: ok\nthreshold:\n  direct: 6\n  planned: 5\n---\nbody\n",
            2,
            "must not exceed",
        ),
        (
            "---\ndescription: ok\nthreshold:\n  direct: 2\n  plannned: 5\n---\nbody\n",
            4,
            "unknown key 'plannned'",
        ),
        ("# just markdown\n\nno frontmatter\n", 0, "missing YAML frontmatter"),
        ("---\ndescription: ok\nbody without a closing fence\n", 0, "not closed"),
        ("---\nmode: primary\n---\nbody\n", 0, "missing required key 'description'"),
        ("---\n- a\n- b\n---\nbody\n", 1, "must be a mapping"),
        ("---\ndescription: ok\n---\n\n   \n", 2, "empty prompt"),
    ],
)
def test_malformed_override_is_reported_and_others_load(tmp_path, text, line, fragment):
    write(tmp_path, "helper", GOOD)
    bad = write(tmp_path, "broken", text)
    # the registered modes, which `default_mode` is checked against (the runtime passes them)
    agents = load_agents(tmp_path, MODES)
    assert agents.get("broken") is None
    assert agents.get("helper") is not None
    assert len(agents.agents) == 17
    found = problems_for(agents, bad)
    assert found, agents.problems
    assert any(p.severity == "error" for p in found)
    messages = " | ".join(p.message for p in found)
    assert fragment in messages
    if line is not None:
        assert line in [p.line for p in found if fragment in p.message], found
    assert all(p.describe().startswith(f"{bad}:") for p in found)


def test_bad_yaml_line_points_into_the_frontmatter(tmp_path):
    bad = write(
        tmp_path,
        "broken",
        "---\ndescription: ok\npermission:\n  edit: allow\n   bash: : deny\n---\nb\n",
    )
    [problem] = problems_for(load_agents(tmp_path), bad)
    assert problem.message.startswith("invalid YAML")
    assert problem.line == 4


def test_broken_override_keeps_the_builtin(tmp_path):
    write(tmp_path, "scout", "---\ndescription: mine\nbogus: 1\n---\nbody\n")
    agents = load_agents(tmp_path)
    assert agents.get("scout").source.startswith(str(builtin_agents_dir()))
    assert len(agents.problems) == 1


def test_duplicate_key_is_a_warning_and_the_file_loads(tmp_path):
    path = write(
        tmp_path, "helper", "---\ndescription: ok\nmode: primary\nmode: subagent\n---\nbody\n"
    )
    agents = load_agents(tmp_path)
    assert agents.get("helper").mode == "subagent"
    [problem] = problems_for(agents, path)
    assert problem.severity == "warning" and problem.line == 3


def test_non_utf8_file_is_reported(tmp_path):
    folder = tmp_path / ".ndomo" / "agents"
    folder.mkdir(parents=True)
    (folder / "latin.md").write_bytes(b"---\ndescription: caf\xe9\n---\nbody\n")
    agents = load_agents(tmp_path)
    assert agents.get("latin") is None
    assert "UTF-8" in agents.problems[0].message


def test_bad_file_name_is_reported(tmp_path):
    path = write(tmp_path, "-dash", GOOD)
    agents = load_agents(tmp_path)
    assert agents.get("-dash") is None
    assert "invalid agent name" in problems_for(agents, path)[0].message


def test_non_md_files_are_ignored(tmp_path):
    folder = tmp_path / ".ndomo" / "agents"
    folder.mkdir(parents=True)
    (folder / "notes.txt").write_text("garbage")
    agents = load_agents(tmp_path)
    assert agents.problems == [] and len(agents.agents) == 16


def test_parse_agent_text_bom_and_crlf():
    text = "\ufeff" + GOOD.replace("\n", "\r\n")
    agent, problems = parse_agent_text(text, name="helper", source="mem")
    assert problems == []
    assert agent.description == "A project helper"
    assert agent.prompt == "Do the thing."


def test_defaults_for_minimal_frontmatter():
    agent, problems = parse_agent_text(
        "---\ndescription: tiny\n---\nhi\n", name="tiny", source="mem"
    )
    assert problems == []
    assert agent.mode == "all" and agent.default_mode is None and agent.threshold is None
    perm = agent.permission
    assert (perm.edit, perm.write, perm.bash, perm.webfetch, perm.plan_db) == ("ask",) * 5
    assert perm.question == "allow" and perm.task == {}


def test_builtin_dir_prefers_the_wheel_folder(tmp_path, monkeypatch):
    shipped = tmp_path / "ndomo"
    (shipped / "_agents").mkdir(parents=True)
    monkeypatch.setattr(loader.importlib.resources, "files", lambda pkg: shipped)
    assert builtin_agents_dir() == shipped / "_agents"


def test_builtin_dir_falls_back_to_checkout(tmp_path, monkeypatch):
    monkeypatch.setattr(loader.importlib.resources, "files", lambda pkg: tmp_path)
    assert builtin_agents_dir() == Path(loader.__file__).resolve().parents[3] / "agents"


def test_primaries_and_get():
    agents = load_agents(None)
    assert agents.get("nobody") is None
    assert [a.name for a in agents.primaries()] == sorted(a.name for a in agents.primaries())
    assert all(a.mode in ("primary", "all") for a in agents.primaries())


async def test_async_loader_matches_sync(tmp_path):
    write(tmp_path, "helper", GOOD)
    agents = await load_agents_async(tmp_path)
    assert agents.get("helper") is not None
    assert agents == load_agents(tmp_path)


def test_default_mode_is_checked_against_the_registered_modes(tmp_path):
    """No fixed list: a mode a plugin registered is fine, one nobody registered is not."""
    from ndomo import compose

    modes = compose.plugins().modes
    text = "---\ndescription: ok\ndefault_mode: {}\n---\nbody\n"
    write(tmp_path, "known", text.format("brainstorming"))
    write(tmp_path, "extra", text.format("sketching"))
    agents = load_agents(tmp_path, modes)
    assert agents.get("known") is not None and agents.get("extra") is None
    assert any("unknown mode 'sketching'" in p.message for p in agents.problems)
    agents = load_agents(tmp_path, [*modes, "sketching"])
    assert agents.get("extra") is not None and not agents.problems
