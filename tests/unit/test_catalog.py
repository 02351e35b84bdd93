"""The catalog: modes from the registry, agents from the loader, defaults from the settings;
jobs picked by role, never by name."""

from __future__ import annotations

from ndomo import compose
from ndomo.agents.loader import load_agents
from ndomo.config import Settings
from ndomo.features.catalog import build_catalog, pick


def test_builtin_catalog_defaults_and_roles(tmp_path):
    modes = compose.plugins().modes
    cat = build_catalog(modes, load_agents(tmp_path, modes), Settings())
    assert [m.name for m in cat.modes if m.default] == ["discussion"]
    assert [a.name for a in cat.agents if a.default] == ["foreman"]
    assert {m.name: m.role for m in cat.modes} == {
        "discussion": "plan",
        "brainstorming": "research",
        "autopilot": "build",
    }
    assert [m.name for m in cat.modes if m.requires_tools] == ["autopilot"]
    assert pick(cat, agent_role="builder", mode_role="build") == ("craftsman", "autopilot")
    assert pick(cat, agent_role="planner", mode_role="research") == ("foreman", "brainstorming")
    assert cat.problems == []


def test_roles_follow_the_agent_files_not_the_names(tmp_path):
    folder = tmp_path / ".ndomo" / "agents"
    folder.mkdir(parents=True)
    # a workspace's own builder as the default agent is picked over the built-in one
    (folder / "maker.md").write_text(
        "---\ndescription: our builder\nmode: primary\nthreshold: true\n---\nbuild\n"
    )
    modes = compose.plugins().modes
    settings = Settings(default_agent="maker")
    cat = build_catalog(modes, load_agents(tmp_path, modes), settings)
    assert pick(cat, agent_role="builder", mode_role="build") == ("maker", "autopilot")
    assert next(a for a in cat.agents if a.name == "maker").role == "builder"


def test_settings_naming_unknown_modes_or_agents_are_reported(tmp_path):
    modes = compose.plugins().modes
    settings = Settings.model_validate({"default_agent": "ghost", "modes": {"default": "turbo"}})
    cat = build_catalog(modes, load_agents(tmp_path, modes), settings)
    assert any("modes.default 'turbo' is not a mode" in p for p in cat.problems)
    assert any("default_agent 'ghost' is not an agent" in p for p in cat.problems)
    assert [m.name for m in cat.modes if m.default] == ["discussion"]  # the first registered
