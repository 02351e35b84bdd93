"""Shell permission corpus: chains, substitutions, wrappers and redirections must not sneak past."""

from __future__ import annotations

from pathlib import Path

import pytest

from ndomo.security.shell import ShellDecision, decide
from ndomo.security.shell_rules import pattern_matches, rule_action, validate_rules

RULES = {
    "*": "ask",
    "git status*": "allow",
    "git diff*": "allow",
    "ls *": "allow",
    "ls": "allow",
    "rm *": "deny",
}

# (command, expected action, substring the reasons must contain or None)
CORPUS: list[tuple[str, str, str | None]] = [
    # plain allowed commands
    ("git status", "allow", "git status*"),
    ("git diff --stat", "allow", "git diff*"),
    ("ls -la src", "allow", "ls *"),
    ("ls", "allow", None),
    ("git status 2>&1", "allow", None),
    ("ls > /dev/null", "allow", None),
    ("ls 2>/dev/null && git status", "allow", None),
    ("(ls; git status)", "allow", None),
    ("if git status; then ls; fi", "allow", None),
    (
        "for f in a b; do git diff $f; done",
        "ask",
        "computed at run time",
    ),  # issue 14: a variable argument asks
    ("g''it status", "allow", None),  # quotes removed: this really runs git status
    ("nice -n 5 git status", "allow", None),
    ("timeout -s KILL 5 git status", "allow", None),
    ("ls && time git status", "allow", None),
    # chains, pipes, newlines, background
    ("git status; rm -rf x", "deny", "rm -rf x"),
    ("git status && rm -rf x", "deny", "rm *"),
    ("git status || rm -rf x", "deny", "rm *"),
    ("ls\nrm -rf x", "deny", "rm -rf x"),
    ("ls | sh", "ask", "sh"),
    ("ls | /bin/bash", "ask", "runs a shell"),
    ("ls | command sh", "ask", "runs a shell"),
    ("git status | grep x", "ask", "grep x"),
    ("ls & rm x", "deny", "rm x"),
    ("ls &", "ask", "background"),
    # substitutions
    ("ls $(rm -rf x)", "deny", "rm -rf x"),
    ("ls `rm -rf x`", "deny", "rm -rf x"),
    ('ls "$(rm -rf x)"', "deny", None),
    ("diff <(ls) <(rm x)", "deny", None),
    ("ls >(cat)", "ask", "process substitution"),
    ("$(echo rm) -rf x", "ask", "computed"),
    ("$CMD -rf x", "ask", "computed"),
    ("x=$(ls)", "ask", "substitution"),
    ("echo ${x:-$(whoami)}", "ask", "could not parse"),
    ("echo ${x:-$(rm y)}", "deny", "could not be parsed"),
    # env prefixes and wrappers
    ("FOO=1 rm -rf x", "deny", "rm *"),
    ("FOO=1 git status", "allow", None),
    ("PATH=. ls", "ask", "PATH"),
    ("GIT_EXTERNAL_DIFF=./evil git diff", "ask", "GIT_EXTERNAL_DIFF"),
    ("env rm -rf x", "deny", "rm *"),
    ("env -i -u HOME A=1 rm x", "deny", None),
    ("/usr/bin/env rm x", "deny", None),
    ("env -S 'rm x'", "ask", "env -S"),
    ("timeout 5 rm x", "deny", None),
    ("nohup rm x", "deny", None),
    ("command rm x", "deny", None),
    ("builtin eval ls", "ask", "eval"),
    ("nice -n 10 rm x", "deny", None),
    ("stdbuf -oL rm x", "deny", None),
    ("time rm x", "deny", None),
    ("ls | xargs rm", "deny", "xargs"),
    (
        "ls | xargs -0 -n1 git status",
        "ask",
        "computed at run time",
    ),  # issue 14: arguments from the input are unknown
    ("ls | xargs cat", "ask", "xargs"),
    ("sudo ls", "ask", "sudo is never auto-allowed"),
    ("sudo -u root rm -rf x", "deny", None),
    ("/bin/rm -rf x", "deny", "rm *"),
    ("./ls", "ask", None),  # a local script named ls is not ls
    ("\\rm x", "deny", None),
    # redirections, heredocs
    ("git status > README.md", "ask", "README.md"),
    ("ls >> out.txt", "ask", "out.txt"),
    ("ls &> log", "ask", "log"),
    ("ls >| f", "ask", None),
    ("ls > $(echo f)", "ask", None),
    ("{ ls; git status; } > out", "ask", "out"),
    ("git status | tee README.md", "ask", "tee"),
    ("cat <<EOF\nhello\nEOF", "ask", "heredoc"),
    ("cat <<< hi", "ask", "here-string"),
    ("exec 3>out", "ask", None),
    # interpreters and eval-likes
    ("bash -c 'git status'", "ask", "bash"),
    ("sh -c 'rm -rf x'", "deny", "rm -rf x"),
    ('bash -lc "ls; rm x"', "deny", None),
    ("zsh -c ls", "ask", None),
    ("eval ls", "ask", "eval"),
    ("eval 'rm -rf x'", "deny", None),
    ("exec ls", "ask", "exec"),
    ("source env.sh", "ask", "source"),
    (". ./env.sh", "ask", None),
    ("python -c 'import os'", "ask", "inline code"),
    ("python3 -c 'import os'", "ask", None),
    ("node -e 'x'", "ask", None),
    ("perl -ne 'print'", "ask", None),
    ("ruby -e 'x'", "ask", None),
    ("echo x | python3", "ask", "reads a program"),
    ("trap 'rm x' EXIT", "ask", "trap"),
    # structures
    ("(ls; rm x)", "deny", None),
    ("{ ls; rm x; }", "deny", None),
    ("while true; do rm x; done", "deny", None),
    ("f() { rm -rf x; }; f", "deny", None),
    ("ls() { echo pwned; }; ls", "ask", "function"),
    ("find . -name '*.pyc' -exec rm {} \\;", "deny", "rm"),
    ("find . -delete", "ask", "delete"),
    ("! rm x", "deny", None),
    # not understood / empty
    ("", "deny", "empty"),
    ("   \n  ", "deny", "empty"),
    ("ls\x00; rm x", "deny", "NUL"),
    ("# only a comment", "deny", "empty"),
    ("ls &&", "ask", "could not parse"),
    ("case a in a) ls;; esac", "ask", "could not parse"),
    ("[[ -f x ]] && rm x", "deny", "could not be parsed"),
    ("echo $((1+2))", "ask", "could not parse"),
    ("'git status'", "ask", None),  # one word with a space is not `git status`
    ("{rm,-rf,x}", "ask", "brace"),
]


@pytest.mark.parametrize(("command", "action", "why"), CORPUS, ids=[c for c, _, _ in CORPUS])
def test_corpus(command: str, action: str, why: str | None) -> None:
    d = decide(command, RULES)
    assert d.action == action, d.explain()
    if why is not None:
        assert why in d.explain(), d.explain()


def test_reasons_name_the_deciding_command() -> None:
    d = decide("git status; rm -rf build", RULES)
    assert d.action == "deny"
    assert d.commands == ["git status", "rm -rf build"]
    assert d.reasons[0].startswith("deny, decided by `rm -rf build`")
    assert "rule 'rm *'" in d.reasons[0]
    assert any("git status" in r and "allow" in r for r in d.reasons[1:])


def test_normalised_commands_listed() -> None:
    d = decide("FOO=1 env -i nohup git diff --stat | cat", RULES)
    assert d.commands == ["git diff --stat", "cat"]
    assert isinstance(d, ShellDecision)


def test_string_rules() -> None:
    assert decide("rm -rf x", "allow").action == "allow"
    assert decide("ls; rm x", "deny").action == "deny"
    assert decide("ls", "ask").action == "ask"
    # never-auto floors hold even under a blanket allow
    assert decide("bash -c ls", "allow").action == "ask"
    assert decide("ls > out", "allow").action == "ask"
    assert decide("sudo ls", "allow").action == "ask"


def test_deny_beats_allow_in_loose_rules() -> None:
    loose = {"*": "allow", "rm *": "deny"}
    for cmd in ["ls; rm x", "echo $(rm x)", "env rm x", "/bin/rm x", "xargs rm", "bash -c 'rm x'"]:
        assert decide(cmd, loose).action == "deny", cmd


def test_invalid_rules_ask() -> None:
    d = decide("ls", {"ls": "yes please"})
    assert d.action == "ask"
    assert "not one of allow, ask, deny" in d.explain()
    assert decide("ls", 42).action == "ask"  # type: ignore[arg-type]
    assert validate_rules({"ls": "allow", "rm *": "nope"}) == [
        "bash permission 'rm *': action 'nope' is not one of allow, ask, deny"
    ]
    assert validate_rules("allow") == []


def test_pattern_semantics() -> None:
    assert pattern_matches("git status*", "git status --short")
    assert pattern_matches("ls *", "ls")  # like OpenCode, a trailing " *" covers the bare command
    assert pattern_matches("*", "anything at all")
    assert not pattern_matches("ls *", "lsblk")
    assert not pattern_matches("git [a]", "git a")  # brackets are literal
    assert pattern_matches("cat ?.txt", "cat a.txt")
    rules = {"git *": "allow", "git push*": "deny", "*": "ask"}
    assert rule_action("git push origin", rules) == ("deny", "git push*")
    assert rule_action("git log", rules) == ("allow", "git *")
    assert rule_action("make", {"ls": "allow"}) == ("ask", None)


def test_paths_outside_workspace_ask(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    roots = [root]
    assert decide("ls -la src", RULES, roots=roots).action == "allow"
    for cmd, needle in [
        ("ls /etc", "/etc"),
        ("ls ../..", "escapes"),
        ("ls ~/.ssh", "home-relative"),
        ("git diff --no-index --output=/tmp/x a b", "/tmp/x"),
        ("ls .env", "secret"),
    ]:
        d = decide(cmd, RULES, roots=roots)
        assert d.action == "ask", cmd
        assert needle in d.explain(), d.explain()
    # a deny is never softened by the path check
    assert decide("rm -rf /etc", RULES, roots=roots).action == "deny"
    # cwd is the base for relative arguments
    assert decide("ls ../src", RULES, roots=roots, cwd=root / "src").action == "allow"


def test_too_long_asks() -> None:
    d = decide("ls " + "a " * 20_000, RULES)
    assert d.action == "ask" and "too long" in d.explain()
