"""The agents' `mcp` permission key: `<server>/<tool>` patterns, default ask, sub-agents get
the intersection."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from ndomo.agents.permissions import intersect, mcp_allowed
from ndomo.agents.policy import is_flat_deny, mcp_subject
from ndomo.agents.schema import AgentPermission


def test_unset_asks() -> None:
    assert mcp_allowed(AgentPermission(), "time/get_current_time") == "ask"


def test_patterns_exact_wins_then_most_specific_then_ask() -> None:
    perm = AgentPermission(
        mcp={"github/*": "ask", "github/create_*": "deny", "time/get_current_time": "allow"}
    )
    assert mcp_allowed(perm, "time/get_current_time") == "allow"
    assert mcp_allowed(perm, "time/convert_time") == "ask"  # no pattern: ask
    assert mcp_allowed(perm, "github/list_issues") == "ask"
    assert mcp_allowed(perm, "github/create_issue") == "deny"


def test_a_sub_agent_gets_the_stricter_of_both() -> None:
    caller = AgentPermission(mcp={"time/*": "allow", "github/*": "deny"})
    sub = AgentPermission(mcp="allow")
    both = intersect(caller, sub)
    assert mcp_allowed(both, "time/get_current_time") == "allow"
    assert mcp_allowed(both, "github/get_me") == "deny"
    assert mcp_allowed(both, "other/x") == "ask"
    assert intersect(AgentPermission(mcp="deny"), AgentPermission(mcp="allow")).mcp == "deny"


def test_a_flat_deny_hides_the_tools() -> None:
    assert is_flat_deny(AgentPermission(mcp="deny"), "mcp")
    assert not is_flat_deny(AgentPermission(mcp={"a/*": "deny"}), "mcp")


def test_tool_names_map_to_subjects() -> None:
    assert mcp_subject("mcp__time__get_current_time") == "time/get_current_time"
    assert mcp_subject("mcp__my-server__do__it") == "my-server/do__it"


def test_bad_values_are_refused() -> None:
    with pytest.raises(ValidationError):
        AgentPermission.model_validate({"mcp": "sometimes"})
    with pytest.raises(ValidationError):
        AgentPermission.model_validate({"mcp": {" ": "allow"}})
