"""`ndomo run "prompt"`: one headless turn, streamed to the terminal.

User errors (unknown agent, no workspace, no model server) are one line on stderr saying
what to do, printed once; exit codes are listed in `ndomo --help` (see ndomo.terminal.cli).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Collection, Iterator

from ndomo.terminal.args import (
    EXIT_FAILED,
    EXIT_USAGE,
    WORKSPACE_HELP,
    resolve_workspace,
    subcommand,
)

TURN_EXIT = {"done": 0, "blocked": 3, "capped": 4, "cancelled": 130}


class _Modes(Collection[str]):
    """The registered modes (`ndomo catalog`), built only when argparse needs them: to check
    a `--mode` value, or to print the help or a usage error — not for every command."""

    def __init__(self) -> None:
        self._names: list[str] | None = None

    def names(self) -> list[str]:
        if self._names is None:
            from ndomo.runtime.plugins import build_plugins

            self._names = list(build_plugins().modes)
        return self._names

    def __contains__(self, name: object) -> bool:
        return name in self.names()

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())


def _here_agents() -> str:
    """The agents of the workspace this folder belongs to, for `ndomo run --help`."""
    from ndomo.agents.loader import load_agents
    from ndomo.trust import view

    root, _error = resolve_workspace(None)
    trusted = root is not None and view(root).trusted
    return ", ".join(a.name for a in load_agents(root if trusted else None).primaries())


class _RunHelp(argparse.HelpFormatter):
    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help
        if action.dest == "agent" and text:
            text += f"; here: {_here_agents()}"
        return text


def _setup(p: argparse.ArgumentParser) -> None:
    p.formatter_class = _RunHelp
    p.add_argument("prompt", help="what to ask; a /slash command runs without the model")
    p.add_argument(
        "--agent",
        "-a",
        default=None,
        help="agent to run the turn (default: the session's agent; `ndomo catalog` lists them)",
    )
    p.add_argument(
        "--mode",
        "-m",
        default=None,
        choices=_Modes(),
        help="mode of this turn, which fences the tools (default: the session's mode): %(choices)s",
    )
    p.add_argument("--workspace", "-w", default=None, help=WORKSPACE_HELP)
    p.add_argument(
        "--session",
        default=None,
        help="continue this session (default: the latest, with its history)",
    )
    p.add_argument("--new", action="store_true", help="start a fresh session (no history)")
    p.add_argument("--task", dest="task_id", default=None, help="execute this plan task")
    p.add_argument(
        "--yes",
        "-y",
        action="store_true",
        help="approve every ask (non-interactive runs deny them)",
    )
    p.add_argument("--json", action="store_true", help="print the turn summary as JSON at the end")


class _UsageError(Exception):
    """A bad request from the user, found before the turn starts."""


@subcommand("run", _setup)
def run(ns: argparse.Namespace) -> int:
    """Run one turn headless and print the answer and tool activity."""
    from ndomo.actions import ActionError
    from ndomo.app import App
    from ndomo.runtime.context import TurnRequest
    from ndomo.runtime.runtime import Runtime, TurnRefused
    from ndomo.terminal.host import TerminalHost

    root, error = resolve_workspace(ns.workspace)
    if error:
        print(error, file=sys.stderr)
        return EXIT_USAGE
    if root is not None:  # trust is the user's answer: `--yes` never gives it
        from ndomo.terminal.trust import ask_once

        ask_once(root, sys.stdin.isatty())

    async def go():
        app = await asyncio.to_thread(App.load, root)
        for p in app.config_problems:
            print(f"ndomo: config: {p.describe()} (default used)", file=sys.stderr)
        try:
            if app.no_store_reason is not None:
                raise _UsageError(app.no_store_reason)
            rt = Runtime.of(app)
            if ns.agent:
                try:
                    await rt.check_agent(ns.agent)
                except TurnRefused as exc:
                    raise _UsageError(f"{exc}; pick one with --agent") from None
            host = TerminalHost(assume_yes=ns.yes)
            session = ns.session
            if ns.new:
                if session:
                    raise _UsageError("--new and --session exclude each other")
                session = (await rt.new_session()).id
            request = TurnRequest(
                prompt=ns.prompt, agent=ns.agent, mode=ns.mode, session=session, task_id=ns.task_id
            )
            return await rt.run(request, host), host
        finally:
            await app.aclose()

    try:
        summary, host = asyncio.run(go())
    except KeyboardInterrupt:
        print("\n[cancelled]", file=sys.stderr)
        return 130
    except _UsageError as exc:
        print(f"ndomo: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except ActionError as exc:
        print(f"ndomo: {exc.message}", file=sys.stderr)
        return EXIT_FAILED
    if summary.payload is not None and not ns.json:
        import yaml

        print(yaml.safe_dump(summary.payload, sort_keys=False).rstrip())
    if (
        summary.turn_id is None and summary.error
    ):  # refused before it started: nothing printed it yet
        print(f"ndomo: {summary.error}", file=sys.stderr)
    if ns.json:
        print(summary.model_dump_json(indent=2))
    elif summary.answer and not any(e.kind == "text" for e in host.events):
        print(summary.answer)
    return TURN_EXIT.get(summary.status, EXIT_FAILED)
