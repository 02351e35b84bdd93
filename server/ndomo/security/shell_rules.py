"""Permission rules for shell commands: OpenCode-style globs over normalised command text."""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Literal

Action = Literal["allow", "ask", "deny"]
ACTIONS: tuple[Action, ...] = ("allow", "ask", "deny")
_RANK = {"allow": 0, "ask": 1, "deny": 2}

Rules = str | Mapping[str, str]


def strictest(*actions: Action) -> Action:
    """deny > ask > allow."""
    return max(actions, key=_RANK.__getitem__)


def rank(action: Action) -> int:
    return _RANK[action]


@lru_cache(maxsize=512)
def _compile(pattern: str) -> re.Pattern[str]:
    body = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    # like OpenCode: "ls *" also matches the bare "ls"
    if pattern.endswith(" *"):
        body = body[: -len(re.escape(" ") + ".*")] + "(?: .*)?"
    return re.compile(body, re.DOTALL)


def pattern_matches(pattern: str, text: str) -> bool:
    """`*` matches anything (spaces too), `?` one character; the whole text must match."""
    return _compile(pattern).fullmatch(text) is not None


def literal_length(pattern: str) -> int:
    return sum(1 for c in pattern if c not in "*?")


def validate_rules(rules: object) -> list[str]:
    """Problems with a `bash` permission value, for agent-definition loaders to report."""
    if isinstance(rules, str):
        return (
            []
            if rules in ACTIONS
            else [f"bash permission {rules!r} is not one of allow, ask, deny"]
        )
    if not isinstance(rules, Mapping):
        return [
            f"bash permission must be an action or a map of pattern to action, got {type(rules).__name__}"
        ]
    problems = []
    for pat, act in rules.items():
        if not isinstance(pat, str) or not pat.strip():
            problems.append(f"bash permission pattern {pat!r} must be a non-empty string")
        if act not in ACTIONS:
            problems.append(
                f"bash permission {pat!r}: action {act!r} is not one of allow, ask, deny"
            )
    return problems


def rule_action(text: str, rules: Rules) -> tuple[Action, str | None]:
    """Action for one normalised simple command and the pattern that decided (None: no pattern).

    The most specific matching pattern (most literal characters) wins; ties go to the
    stricter action. No match, or a malformed rule, means "ask".
    """
    if isinstance(rules, str):
        return (rules if rules in ACTIONS else "ask"), None
    if not isinstance(rules, Mapping):
        return "ask", None
    best: tuple[tuple[int, int, int], Action, str] | None = None
    for pat, act in rules.items():
        if not isinstance(pat, str) or not pattern_matches(pat, text):
            continue
        action: Action = act if act in ACTIONS else "ask"
        key = (literal_length(pat), len(pat), _RANK[action])
        if best is None or key > best[0]:
            best = (key, action, pat)
    if best is None:
        return "ask", None
    return best[1], best[2]
