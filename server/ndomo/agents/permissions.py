"""Static permission policy: stricter-of merges, caller ∩ sub-agent, and `task` map lookups.

A delegated sub-agent never gets more than its caller: every permission of the
intersection is the stricter of both sides. Bash maps cannot be merged into one map
exactly, so they become a `BashPolicy` whose layers are all consulted at decision time.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache

from .schema import STRICTNESS, Action, AgentPermission, BashPolicy, TaskPolicy

__all__ = [
    "STRICTNESS",
    "merge_stricter",
    "intersect",
    "task_allowed",
    "match_rules",
    "decide_bash",
    "bash_layers",
    "decide_network",
    "mcp_allowed",
]

_GLOB_CHARS = frozenset("*?")


def merge_stricter(a: str, b: str) -> Action:
    """deny > ask > allow; an unknown action is treated as deny."""
    if a not in STRICTNESS or b not in STRICTNESS:
        return "deny"
    return a if STRICTNESS[a] >= STRICTNESS[b] else b  # type: ignore[return-value]  # both are keys of STRICTNESS, i.e. Actions


def _is_glob(key: str) -> bool:
    return any(c in _GLOB_CHARS for c in key)


def _specificity(pattern: str) -> int:
    return sum(1 for c in pattern if c not in _GLOB_CHARS)


@lru_cache(maxsize=256)
def _glob(pattern: str) -> re.Pattern[str]:
    # Same glob dialect as the shell rules: `*` any run, `?` one character, nothing else.
    return re.compile(
        "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    )


def match_rules(rules: Mapping[str, str], name: str) -> str | None:
    """The action for `name` in one map: exact key, else the most specific matching glob
    (most literal characters; the stricter action on a tie, as for shell rules), else None."""
    if name in rules:
        return rules[name]
    best: tuple[int, int, int] | None = None
    action = None
    for pattern, value in rules.items():
        if _is_glob(pattern) and _glob(pattern).fullmatch(name):
            rank = (_specificity(pattern), len(pattern), STRICTNESS.get(value, 2))
            if best is None or rank > best:
                best, action = rank, value
    return action


def task_allowed(perm: AgentPermission | Mapping[str, str], agent_name: str) -> Action:
    """May this agent delegate to `agent_name`? An agent no key matches is denied."""
    task = perm.task if isinstance(perm, AgentPermission) else perm
    layers = task.layers if isinstance(task, TaskPolicy) else [task]
    result: Action = "allow"
    for layer in layers:
        result = merge_stricter(result, match_rules(layer, agent_name) or "deny")
    return result


def bash_layers(bash) -> list:
    """The rule sets a bash permission stands for (a `BashPolicy` is already layered)."""
    return list(bash.layers) if isinstance(bash, BashPolicy) else [bash]


def _intersect_bash(a, b):
    if isinstance(a, str) and isinstance(b, str):
        return merge_stricter(a, b)
    if a == "deny" or b == "deny":
        return "deny"
    layers: list = []
    for rules in bash_layers(a) + bash_layers(b):
        if rules not in layers:
            layers.append(rules)
    # A bare "allow" layer never decides more strictly than a map (no match in a map asks,
    # and the parser's own "never auto-allowed" rules apply to every layer alike).
    strict = [rules for rules in layers if rules != "allow"]
    layers = strict or ["allow"]
    if len(layers) == 1:
        return layers[0]
    return BashPolicy(layers=layers)


def _intersect_task(a, b):
    plain = isinstance(a, dict) and isinstance(b, dict)
    if plain and not any(_is_glob(k) and k != "*" for k in (*a, *b)):
        # Exact: literal names plus the "*" fallback of each side.
        names = [k for k in dict.fromkeys((*a, *b)) if k != "*"]
        merged = {
            name: merge_stricter(task_allowed(a, name), task_allowed(b, name)) for name in names
        }
        merged["*"] = merge_stricter(a.get("*", "deny"), b.get("*", "deny"))
        return merged
    layers: list[dict[str, Action]] = []
    for side in (a, b):
        layers.extend(side.layers if isinstance(side, TaskPolicy) else [side])
    return TaskPolicy(layers=layers)


def intersect(caller: AgentPermission, sub: AgentPermission) -> AgentPermission:
    """The permissions a sub-agent runs with when `caller` delegates to it."""
    return AgentPermission(
        edit=merge_stricter(caller.edit, sub.edit),
        write=merge_stricter(caller.write, sub.write),
        bash=_intersect_bash(caller.bash, sub.bash),
        webfetch=merge_stricter(caller.webfetch, sub.webfetch),
        question=merge_stricter(caller.question, sub.question),
        task=_intersect_task(caller.task, sub.task),
        plan_db=merge_stricter(caller.plan_db, sub.plan_db),
        network=_intersect_bash(caller.network, sub.network),
        mcp=_intersect_mcp(caller.mcp, sub.mcp),
    )


def _mcp_layers(mcp) -> list[dict[str, Action]]:
    if isinstance(mcp, TaskPolicy):
        return list(mcp.layers)
    if isinstance(mcp, str):
        bare: dict[str, Action] = {"*": merge_stricter(mcp, mcp)}
        return [bare]
    return [mcp]


def _intersect_mcp(a, b):
    if isinstance(a, str) and isinstance(b, str):
        return merge_stricter(a, b)
    return TaskPolicy(layers=_mcp_layers(a) + _mcp_layers(b))


def mcp_allowed(perm: AgentPermission, subject: str) -> Action:
    """The agent's action for one MCP tool, `<server>/<tool>`: the strictest layer's
    (in each, the exact or most specific pattern; no match asks)."""
    result: Action = "allow"
    for layer in _mcp_layers(perm.mcp):
        result = merge_stricter(result, match_rules(layer, subject) or "ask")
    return result


def decide_bash(perm: AgentPermission, command: str, *, cwd=None, roots=None, secret_globs=None):
    """`ShellDecision` for one command under an agent's (possibly layered) bash permission."""
    bash = perm.bash
    if isinstance(bash, BashPolicy):
        return bash.decide(command, cwd=cwd, roots=roots, secret_globs=secret_globs)
    from ndomo.security.shell import decide

    return decide(command, bash, cwd=cwd, roots=roots, secret_globs=secret_globs)


def decide_network(
    perm: AgentPermission, command: str, *, cwd=None, roots=None, secret_globs=None
) -> Action:
    """The agent's `network` action for one shell command (a map is matched like `bash`:
    every simple command of the line must be allowed for the line to get network)."""
    net = perm.network
    if isinstance(net, str):
        return net
    if isinstance(net, BashPolicy):
        return net.decide(command, cwd=cwd, roots=roots, secret_globs=secret_globs).action
    from ndomo.security.shell import decide

    return decide(command, net, cwd=cwd, roots=roots, secret_globs=secret_globs).action
