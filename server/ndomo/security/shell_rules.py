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


# Scoped rules that "Always" proposes (the user may edit them before saving):
# `<tool> <subcommand> *` for tools whose first word says what they do …
SUBCOMMAND_TOOLS = frozenset(
    {
        "git", "npm", "pnpm", "yarn", "bun", "pip", "pip3", "uv", "cargo", "go", "docker",
        "podman", "kubectl", "make", "poetry", "dotnet", "gh", "deno", "zig", "mvn", "gradle",
        "bundle", "rake", "mix", "composer", "npx",
    }
)  # fmt: skip
# … `<interpreter> <script> *` (`python3 -m <module> *`) for interpreters …
INTERPRETERS = frozenset({"python", "python3", "node", "ruby", "perl", "php"})
# … never a wildcard for commands whose every use is a different decision.
EXACT_ONLY = frozenset(
    {
        "rm", "sudo", "su", "doas", "curl", "wget", "ssh", "scp", "sftp", "rsync", "dd", "chmod",
        "chown", "mkfs", "eval", "exec", "sh", "bash", "zsh", "dash", "fish", "env", "xargs",
        "find", "nc", "ncat", "socat", "kill", "pkill", "killall", "systemctl", "crontab",
        "source", ".", "command", "nohup", "setsid", "timeout", "watch", "nice", "time",
    }
)  # fmt: skip


def scoped_rule(simple_commands: list[str]) -> str | None:
    """The rule "Always" proposes for a command line given as its normalised simple
    commands, or None (then the exact command is saved): one simple command only, its
    words plain (no glob characters in what the rule keeps)."""
    if len(simple_commands) != 1:
        return None
    words = simple_commands[0].split(" ")
    program = words[0]
    if not program or program in EXACT_ONLY:
        return None
    rest = [w for w in words[1:] if w]
    if program in INTERPRETERS:
        if len(rest) >= 2 and rest[0] == "-m":
            keep = [program, "-m", rest[1]]
        elif rest and not rest[0].startswith("-"):
            keep = [program, rest[0]]
        else:
            return None  # `python -c …`: the code is the command
    elif program in SUBCOMMAND_TOOLS and rest and not rest[0].startswith("-"):
        keep = [program, rest[0]]
    else:
        keep = [program]
    prefix = " ".join(keep)
    if any(c in prefix for c in "*?[]'\"\\$`"):
        return None
    return f"{prefix} *"


def has_wildcard(pattern: str) -> bool:
    """A saved fnmatch pattern with a `*` or `?` outside `[x]` escapes (not an exact subject)."""
    return bool(re.search(r"[*?]", re.sub(r"\[[^\]]*\]", "", pattern)))
