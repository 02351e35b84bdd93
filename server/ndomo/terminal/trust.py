"""`ndomo trust [PATH]`, `ndomo trust --revoke [PATH]`, `ndomo trust --list`; and the one
question `ndomo run` asks in a folder it has never been told about.

Trusting shows what the folder configures, records the answer in the user's trust record
(ndomo.trust) and, in a terminal, asks to confirm each project setting that needs the
user's word (a key variable for a project's model host, `sandbox: off` …). Nothing here
trusts or confirms by default: `ndomo run --yes` approves a turn's tool calls, never trust.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TextIO

from ndomo.terminal.args import EXIT_FAILED, EXIT_OK, EXIT_USAGE, subcommand


def _setup(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "path",
        nargs="?",
        default=None,
        help="the workspace folder (default: the project this folder belongs to)",
    )
    group = p.add_mutually_exclusive_group()
    group.add_argument("--revoke", action="store_true", help="stop trusting the folder")
    group.add_argument("--list", action="store_true", help="list every folder you answered for")


def _ask(question: str, stdin: TextIO, stderr: TextIO) -> bool:
    stderr.write(f"{question} [y/N] ")
    stderr.flush()
    answer = stdin.readline()
    return answer.strip().lower() in ("y", "yes")


def describe(root: Path, found: list[str]) -> str:
    if not found:
        return f"{root} configures nothing of ndomo's."
    lines = [f"{root} would configure:"] + [f"  - {item}" for item in found]
    return "\n".join(lines)


def _workspace(flag: str | None) -> tuple[Path | None, str | None]:
    from ndomo.terminal.args import resolve_workspace

    root, error = resolve_workspace(flag)
    if error is None and root is None:
        return None, "ndomo trust: no project folder here; pass its path"
    return root, error


@subcommand("trust", _setup)
def trust(ns: argparse.Namespace) -> int:
    """Trust a folder: let its .ndomo config, agents, reflexes and instructions apply."""
    from ndomo.trust import TrustError, configures, list_trust, needs_confirmation, set_trust

    try:
        if ns.list:
            rows = list_trust()
            if not rows:
                print("no folder recorded (every folder is unknown: its .ndomo is not read)")
            for path, state, at in rows:
                print(f"{state:9}  {path}  ({at})")
            return EXIT_OK
        root, error = _workspace(ns.path)
        if error or root is None:
            print(error, file=sys.stderr)
            return EXIT_USAGE
        if ns.revoke:
            set_trust(root, False)
            print(
                f"{root}: untrusted (its .ndomo config, agents, reflexes and instructions are ignored)"
            )
            return EXIT_OK
        print(describe(root, configures(root)))
        from ndomo.trust import view

        before = view(root).grant.confirmed  # confirmed earlier: kept, not asked again
        confirmed: list[str] = []
        needs = [
            n for n in needs_confirmation(root, _user_side(root)) if n.confirmation not in before
        ]
        interactive = sys.stdin.isatty()
        for need in needs:
            question = f"{need.key}: {need.value!r} {need.why}. Allow it?"
            if interactive and _ask(question, sys.stdin, sys.stderr):
                confirmed.append(need.confirmation)
        set_trust(root, True, confirmed)
        print(f"{root}: trusted")
        left = [n for n in needs if n.confirmation not in confirmed]
        for need in left:
            print(
                f"  not confirmed, not applied: {need.key} ({need.why})"
                + ("" if interactive else "; run `ndomo trust` in a terminal to confirm it")
            )
        return EXIT_OK
    except TrustError as exc:
        print(f"ndomo trust: {exc}", file=sys.stderr)
        return EXIT_FAILED


def _user_side(root: Path):
    """The user's own settings (defaults < user config < editor/env), without the project."""
    from ndomo.config import load_settings

    settings, _problems = load_settings(root)  # untrusted: the project's file is not read
    return settings


def ask_once(root: Path, interactive: bool) -> None:
    """Before `ndomo run` loads a folder: in a terminal, a folder never asked about that
    configures something gets one question (the answer is recorded either way); otherwise
    an untrusted folder that configures something is said in one line on stderr."""
    from ndomo.trust import TrustError, configures, view

    state = view(root)
    if state.trusted:
        return
    found = configures(root)
    if not found:
        return
    if interactive and state.state == "unknown" and not state.note:
        from ndomo.trust import set_trust

        print(describe(root, found), file=sys.stderr)
        answer = _ask(
            "Trust this folder? (`ndomo trust --revoke` undoes it)", sys.stdin, sys.stderr
        )
        try:
            set_trust(root, answer)
        except TrustError as exc:
            print(f"ndomo: {exc}", file=sys.stderr)
        return
    why = state.note or f"{state.state}"
    print(
        f"ndomo: {root} is not trusted ({why}): ignoring its {len(found)} ndomo setting(s) "
        f"(.ndomo config, agents, reflexes, instructions); `ndomo trust {root}` to trust it",
        file=sys.stderr,
    )
