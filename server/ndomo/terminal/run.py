"""`ndomo run "prompt"`: one headless turn, streamed to the terminal.

User errors (unknown agent, no workspace, no model server) are one line on stderr saying
what to do, printed once; exit codes are listed in `ndomo --help` (see ndomo.terminal.cli).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable, Collection, Iterator
from functools import partial
from typing import TYPE_CHECKING

from ndomo.terminal.args import (
    EXIT_FAILED,
    EXIT_USAGE,
    WORKSPACE_HELP,
    Subcommand,
    resolve_workspace,
)

if TYPE_CHECKING:
    from ndomo.runtime.plugins import Plugins

TURN_EXIT = {"done": 0, "blocked": 3, "capped": 4, "cancelled": 130}


class _Modes(Collection[str]):
    """The registered modes (`ndomo catalog`), built only when argparse needs them: to check
    a `--mode` value, or to print the help or a usage error — not for every command."""

    def __init__(self, plugins: Callable[[], Plugins]) -> None:
        self._plugins = plugins
        self._names: list[str] | None = None

    def names(self) -> list[str]:
        if self._names is None:
            self._names = list(self._plugins().modes)
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


def _setup(p: argparse.ArgumentParser, plugins: Callable[[], Plugins]) -> None:
    p.formatter_class = _RunHelp
    p.add_argument(
        "prompt",
        help="what to ask (@path adds a file's text, @plan the committed plan, "
        "@server:uri an MCP resource's text); a /slash command runs without the model "
        "(an MCP prompt, /mcp__server__prompt name=value, becomes the prompt)",
    )
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
        choices=_Modes(plugins),
        metavar="MODE",  # argparse builds a metavar from the choices otherwise, loading them
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


def command(plugins: Callable[[], Plugins]) -> Subcommand:
    """`ndomo run`, its turns run with the features `plugins` builds."""
    return Subcommand(
        "run",
        partial(_setup, plugins=plugins),
        partial(run, plugins=plugins),
        "Run one turn headless and print the answer and tool activity.",
    )


def usage_line(usage: dict) -> str:
    """The turn's and the session's tokens (and cost with `model.price`), after the answer:
    `tokens: 1,234 prompt + 56 completion · session 5,000 + 300 · cost $0.0042 (session $0.0150)`."""
    turn, session, cost = usage.get("turn") or {}, usage.get("session") or {}, usage.get("cost")
    parts = [
        f"tokens: {turn.get('prompt', 0):,} prompt + {turn.get('completion', 0):,} completion",
        f"session {session.get('prompt', 0):,} + {session.get('completion', 0):,}",
    ]
    if cost:
        cur = cost.get("currency", "$")
        parts.append(f"cost {cur}{cost.get('turn') or 0:.4f} (session {cur}{cost['session']:.4f})")
    return " · ".join(parts)


def run(ns: argparse.Namespace, plugins: Callable[[], Plugins]) -> int:
    """Run one turn headless and print the answer and tool activity."""
    from ndomo import startup
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
        # The folder loads (its config files, trust record, git queries) in a thread while
        # this one builds the registries (imports): neither waits for the other.
        # (run_in_executor submits now; a to_thread task would start only after plugins())
        loading = asyncio.get_running_loop().run_in_executor(None, App.load, root)
        try:
            registries = plugins()
        finally:
            app = await loading
        startup.release()  # start-up's heap is built: frozen, and the collector back on
        for p in app.config_problems:
            print(f"ndomo: config: {p.describe()} (default used)", file=sys.stderr)
        try:
            if app.no_store_reason is not None:
                raise _UsageError(app.no_store_reason)
            rt = Runtime.of(app, registries)
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
            from ndomo.features.mentions import MentionError, attach

            try:  # read before the turn: a refused mention sends nothing
                attached = await attach(ns.prompt, [], app.root, rt, session, host.read_text)
            except MentionError as exc:
                raise _UsageError(str(exc)) from None
            request = TurnRequest(
                prompt=ns.prompt, agent=ns.agent, mode=ns.mode, session=session, task_id=ns.task_id
            ).attach(attached)
            summary = await rt.run(request, host)
            state = rt.sessions.get(summary.session)
            usage = (await rt.status(state)).usage if state is not None else None
            return summary, host, usage
        finally:
            await app.aclose()

    try:
        summary, host, usage = asyncio.run(go())
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
        from ndomo.security.text import visible

        print(f"ndomo: {visible(summary.error)}", file=sys.stderr)
    if ns.json:
        print(json.dumps({**summary.model_dump(mode="json"), "usage": usage}, indent=2))
        return TURN_EXIT.get(summary.status, EXIT_FAILED)
    if summary.answer and not any(e.kind == "text" for e in host.events):
        from ndomo.security.text import model_text

        print(model_text(summary.answer))
    if usage and (summary.tokens_in or summary.tokens_out):
        print(usage_line(usage))
    return TURN_EXIT.get(summary.status, EXIT_FAILED)
