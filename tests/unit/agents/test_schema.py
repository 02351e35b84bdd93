"""Schema models: defaults, strictness, and what a frontmatter can never express."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from ndomo.agents.permissions import intersect
from ndomo.agents.schema import AgentDef, AgentFrontmatter, AgentPermission, BashPolicy, Threshold


def test_threshold_defaults_and_order():
    assert (Threshold().direct, Threshold().planned) == (2, 5)
    with pytest.raises(ValidationError):
        Threshold(direct=6, planned=5)
    with pytest.raises(ValidationError):
        Threshold(direct=-1)


def test_frontmatter_forbids_unknown_keys_everywhere():
    with pytest.raises(ValidationError, match="extra"):
        AgentFrontmatter.model_validate({"description": "x", "tools": {"bash": True}})
    with pytest.raises(ValidationError, match="extra"):
        AgentFrontmatter.model_validate({"description": "x", "permission": {"read": "allow"}})


def test_a_frontmatter_cannot_smuggle_a_layered_policy():
    with pytest.raises(ValidationError):
        AgentPermission.model_validate({"bash": {"layers": ["allow"]}})
    with pytest.raises(ValidationError):
        AgentPermission.model_validate({"task": {"layers": [{"*": "allow"}]}})


def test_bare_task_action_is_a_star_map():
    assert AgentPermission(task="ask").task == {"*": "ask"}


def test_agent_name_is_validated():
    with pytest.raises(ValidationError):
        AgentDef(name="../evil", description="d", prompt="p", source="s")
    assert (
        AgentDef(name="my_agent.v2", description="d", prompt="p", source="s").name == "my_agent.v2"
    )


def test_layered_permission_serialises():
    merged = intersect(AgentPermission(bash={"*": "ask"}), AgentPermission(bash={"ls*": "allow"}))
    assert isinstance(merged.bash, BashPolicy)
    assert merged.model_dump()["bash"] == {"layers": [{"*": "ask"}, {"ls*": "allow"}]}
    assert '"layers"' in merged.model_dump_json()


def test_blank_patterns_are_rejected():
    with pytest.raises(ValidationError, match="empty pattern"):
        AgentPermission(bash={" ": "allow"})
    with pytest.raises(ValidationError, match="empty pattern"):
        AgentPermission(task={"": "allow"})
