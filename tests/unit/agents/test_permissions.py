"""Static policy: stricter-of merges, caller ∩ sub-agent, task lookups, layered bash."""

from __future__ import annotations

import sys
import types

import pytest

from ndomo.agents.permissions import decide_bash, intersect, merge_stricter, task_allowed
from ndomo.agents.schema import AgentPermission, BashPolicy, TaskPolicy


@pytest.mark.parametrize(
    "a, b, out",
    [
        ("allow", "allow", "allow"),
        ("allow", "ask", "ask"),
        ("ask", "allow", "ask"),
        ("ask", "deny", "deny"),
        ("deny", "allow", "deny"),
        ("deny", "deny", "deny"),
        ("ask", "ask", "ask"),
        ("allow", "bogus", "deny"),
    ],
)
def test_merge_stricter(a, b, out):
    assert merge_stricter(a, b) == out


def test_task_allowed_exact_glob_and_default():
    perm = AgentPermission(
        task={"*": "ask", "*-smith": "allow", "go-smith": "deny", "scout": "allow"}
    )
    assert task_allowed(perm, "go-smith") == "deny"  # exact beats glob
    assert task_allowed(perm, "rust-smith") == "allow"  # more literal chars beat "*"
    assert task_allowed(perm, "scout") == "allow"
    assert task_allowed(perm, "sage") == "ask"
    assert (
        task_allowed(AgentPermission(task={"scout": "allow"}), "sage") == "deny"
    )  # no match denies
    assert task_allowed(AgentPermission(), "scout") == "deny"
    assert task_allowed(AgentPermission(task="allow"), "anyone") == "allow"
    assert task_allowed({"s*": "allow"}, "scribe") == "allow"


def test_intersect_scalars_take_the_stricter():
    caller = AgentPermission(
        edit="allow", write="ask", webfetch="deny", question="allow", plan_db="allow"
    )
    sub = AgentPermission(
        edit="deny", write="allow", webfetch="allow", question="ask", plan_db="ask"
    )
    out = intersect(caller, sub)
    assert (out.edit, out.write, out.webfetch, out.question, out.plan_db) == (
        "deny",
        "ask",
        "deny",
        "ask",
        "ask",
    )


def test_intersect_is_never_wider_than_either_side():
    actions = ["allow", "ask", "deny"]
    for a in actions:
        for b in actions:
            out = intersect(AgentPermission(edit=a, bash=a), AgentPermission(edit=b, bash=b))
            rank = {"allow": 0, "ask": 1, "deny": 2}
            assert rank[out.edit] == max(rank[a], rank[b])
            assert out.bash == out.edit


def test_intersect_bash_maps_become_layers():
    caller = AgentPermission(bash={"*": "ask", "git *": "allow"})
    sub = AgentPermission(bash={"*": "ask", "pytest*": "allow"})
    out = intersect(caller, sub)
    assert isinstance(out.bash, BashPolicy)
    assert out.bash.layers == [{"*": "ask", "git *": "allow"}, {"*": "ask", "pytest*": "allow"}]
    # flattening: a third level keeps all layers, no duplicates
    again = intersect(out, sub)
    assert again.bash.layers == out.bash.layers


def test_intersect_bash_shortcuts():
    rules = {"*": "ask", "ls*": "allow"}
    assert intersect(AgentPermission(bash="deny"), AgentPermission(bash=rules)).bash == "deny"
    assert intersect(AgentPermission(bash=rules), AgentPermission(bash="deny")).bash == "deny"
    assert intersect(AgentPermission(bash="allow"), AgentPermission(bash=rules)).bash == rules
    assert intersect(AgentPermission(bash=rules), AgentPermission(bash=rules)).bash == rules
    assert intersect(AgentPermission(bash="ask"), AgentPermission(bash=rules)).bash.layers == [
        "ask",
        rules,
    ]


def test_intersect_task_maps_exact_without_globs():
    caller = AgentPermission(
        task={"*": "deny", "scout": "allow", "go-smith": "allow", "painter": "ask"}
    )
    sub = AgentPermission(task={"*": "ask", "scout": "allow", "painter": "allow", "sage": "allow"})
    out = intersect(caller, sub)
    assert isinstance(out.task, dict)
    for name in ["scout", "go-smith", "painter", "sage", "someone"]:
        assert task_allowed(out, name) == merge_stricter(
            task_allowed(caller, name), task_allowed(sub, name)
        ), name
    assert task_allowed(out, "scout") == "allow"
    assert task_allowed(out, "go-smith") == "ask"  # caller allows, sub asks via "*"
    assert task_allowed(out, "sage") == "deny"  # caller denies via "*"
    assert task_allowed(out, "painter") == "ask"


def test_intersect_task_maps_with_globs_stay_exact():
    caller = AgentPermission(task={"*-smith": "allow", "scout": "allow"})
    sub = AgentPermission(task={"go-*": "allow", "*": "deny", "rust-smith": "ask"})
    out = intersect(caller, sub)
    assert isinstance(out.task, TaskPolicy)
    for name in ["go-smith", "rust-smith", "js-smith", "scout", "go-fast"]:
        assert task_allowed(out, name) == merge_stricter(
            task_allowed(caller, name), task_allowed(sub, name)
        ), name
    assert task_allowed(out, "go-smith") == "allow"
    assert task_allowed(out, "rust-smith") == "ask"


def test_intersect_with_builtins_foreman_cannot_widen_scout():
    from ndomo.agents.loader import load_agents

    agents = load_agents(None)
    out = intersect(agents.get("foreman").permission, agents.get("scout").permission)
    assert out.bash == "deny" and out.edit == "deny"
    assert task_allowed(out, "scout") == "deny"
    crafted = intersect(agents.get("craftsman").permission, agents.get("python-smith").permission)
    assert crafted.edit == "allow" and isinstance(crafted.bash, BashPolicy)


@pytest.fixture
def fake_shell(monkeypatch):
    """A stand-in `ndomo.security.shell` whose decision is the first matching literal prefix."""

    class ShellDecision:
        def __init__(self, action, command):
            self.action, self.commands, self.reasons = action, [command], [f"{action} by fake"]

    def decide(command, rules, *, cwd=None, roots=None, secret_globs=None):
        if isinstance(rules, str):
            return ShellDecision(rules, command)
        best = max((k for k in rules if command.startswith(k.rstrip("*"))), key=len, default=None)
        return ShellDecision(rules[best] if best is not None else "ask", command)

    module = types.ModuleType("ndomo.security.shell")
    module.decide = decide
    monkeypatch.setitem(sys.modules, "ndomo.security.shell", module)
    return module


def test_bash_policy_strictest_layer_decides(fake_shell):
    policy = BashPolicy(
        layers=[
            {"*": "ask", "git *": "allow", "pytest*": "allow"},
            {"*": "ask", "pytest*": "allow", "rm *": "deny"},
        ]
    )
    assert policy.decide("pytest -q").action == "allow"
    assert policy.decide("git status").action == "ask"  # the second layer does not allow git
    assert policy.decide("rm -rf x").action == "deny"
    assert BashPolicy(layers=["ask", {"*": "allow"}]).decide("ls").action == "ask"


def test_decide_bash_uses_plain_rules_or_policy(fake_shell):
    perm = AgentPermission(bash={"*": "deny", "ls*": "allow"})
    assert decide_bash(perm, "ls -la").action == "allow"
    assert decide_bash(perm, "curl x").action == "deny"
    merged = intersect(
        AgentPermission(bash={"*": "ask", "ls*": "allow"}),
        AgentPermission(bash={"*": "allow", "ls*": "deny"}),
    )
    assert decide_bash(merged, "ls").action == "deny"


def test_intersection_with_real_shell_parser():
    merged = intersect(
        AgentPermission(bash={"*": "ask", "git status*": "allow", "pytest*": "allow"}),
        AgentPermission(bash={"*": "ask", "pytest*": "allow", "rm *": "deny"}),
    )
    assert decide_bash(merged, "pytest -q").action == "allow"
    assert decide_bash(merged, "git status").action == "ask"
    assert decide_bash(merged, "pytest -q; rm -rf x").action == "deny"


def test_task_glob_tie_goes_to_the_stricter_and_brackets_are_literal():
    assert task_allowed({"a*": "allow", "*a": "deny"}, "aa") == "deny"
    assert task_allowed({"[gs]*": "allow"}, "go-smith") == "deny"
    assert task_allowed({"[gs]*": "allow"}, "[gs]x") == "allow"
    assert task_allowed({"?o-smith": "allow"}, "go-smith") == "allow"
