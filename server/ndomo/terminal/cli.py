"""The `ndomo` command: `serve`, `run`, plus one subcommand per declared action (which
commands and actions exist is given by the composition root, `ndomo.compose`).

`ndomo plan list --status executing --json` is the action `plan.list`; flags are the
fields of its params model and pydantic validates them exactly as over LSP.

Every user error is one line on stderr saying what to do next, printed once. Exit codes:
0 done · 1 failed (refused, model unreachable, turn failed) · 2 usage (bad flag or value,
unknown agent or mode, no workspace) · 3 blocked (handed back) · 4 capped (iteration or output cap, a loop) ·
130 cancelled.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ndomo import __version__
from ndomo.terminal.args import (
    EXIT_FAILED,
    EXIT_USAGE,
    WORKSPACE_HELP,
    Subcommand,
    add_model_flags,
    resolve_workspace,
)

if TYPE_CHECKING:  # pydantic, yaml and the actions load only when a parser is built
    from ndomo.actions import Action, ActionRegistry


@dataclass(frozen=True)
class Commands:
    """What the command line offers (given by the composition root), each part built only
    when a command needs it."""

    serve: Callable[[], Subcommand]  # alone: an editor spawning the server waits for no more
    others: Callable[[], list[Subcommand]]  # `run` …
    actions: Callable[[], ActionRegistry]  # one subcommand each (surface "cli")


def render_result(act: Action, result: Any, as_json: bool) -> str:
    if as_json:
        return json.dumps(result, indent=2, ensure_ascii=False)
    if act.render is not None:
        return act.render(result)
    if result is None:
        return "ok"
    import yaml

    return yaml.safe_dump(result, sort_keys=False, allow_unicode=True).rstrip()


def run_action(act: Action, ns: argparse.Namespace) -> int:
    from ndomo.actions import ActionError
    from ndomo.app import App, NoWorkspace

    raw = {
        k: v
        for k, v in vars(ns).items()
        if k not in {"workspace", "json", "_handler", "command", "verb"}
    }
    root, error = resolve_workspace(ns.workspace)
    if error:
        print(error, file=sys.stderr)
        return EXIT_USAGE

    async def go() -> Any:
        app = await asyncio.to_thread(App.load, root)
        if not act.shows_config:  # `health` lists them in its own report: once is enough
            for p in app.config_problems:
                print(f"ndomo: config: {p.describe()} (default used)", file=sys.stderr)
        try:
            return await act.invoke(app, raw)
        finally:
            await app.aclose()

    try:
        result = asyncio.run(go())
    except NoWorkspace as exc:
        print(f"ndomo {' '.join(act.path)}: {exc.message}", file=sys.stderr)
        return EXIT_USAGE
    except ActionError as exc:
        print(f"ndomo {' '.join(act.path)}: {exc.message}", file=sys.stderr)
        return EXIT_USAGE if exc.kind == "invalid" else EXIT_FAILED
    print(render_result(act, result, ns.json))
    if isinstance(result, dict) and result.get("ok") is False:
        return 1
    return 0


def build_parser(commands: Commands) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ndomo",
        description="ndomo: foreman + craftsman in your editor",
        epilog="exit codes: 0 done, 1 failed, 2 usage error, 3 blocked (handed back), 4 capped, 130 cancelled",
    )
    parser.add_argument("--version", action="version", version=f"ndomo {__version__}")
    subs = parser.add_subparsers(dest="command", metavar="COMMAND")

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--workspace", "-w", default=None, help=WORKSPACE_HELP)
    common.add_argument("--json", action="store_true", help="print the result as JSON")

    for cmd in [commands.serve(), *commands.others()]:
        p = subs.add_parser(cmd.name, help=cmd.help)
        cmd.setup(p)
        p.set_defaults(_handler=cmd.handler)

    groups: dict[str, argparse._SubParsersAction] = {}
    for act in commands.actions().all("cli"):
        path = act.path
        if len(path) == 1:
            p = subs.add_parser(
                path[0], parents=[common], help=act.summary, description=act.summary
            )
        else:
            if path[0] not in groups:
                gp = subs.add_parser(path[0], help=f"{path[0]} commands")
                groups[path[0]] = gp.add_subparsers(dest="verb", metavar="VERB", required=True)
            p = groups[path[0]].add_parser(
                path[1], parents=[common], help=act.summary, description=act.summary
            )
        add_model_flags(p, act.params)
        p.set_defaults(_handler=lambda ns, act=act: run_action(act, ns))
    return parser


def _one_parser(commands: Commands, name: str) -> argparse.ArgumentParser:
    """Only `name` (serve, run, acp, resident): an editor spawning the server, or a script's `ndomo run`,
    must not wait for every action's command line. `--help` builds the whole parser."""
    found = commands.serve() if name == "serve" else None
    if found is None:
        found = next(c for c in commands.others() if c.name == name)
    parser = argparse.ArgumentParser(prog="ndomo")
    subs = parser.add_subparsers(dest="command", metavar="COMMAND")
    p = subs.add_parser(found.name, help=found.help)
    found.setup(p)
    p.set_defaults(_handler=found.handler)
    return parser


def main(argv: list[str] | None, commands: Commands) -> int:
    logging.basicConfig(
        stream=sys.stderr, level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )
    args = sys.argv[1:] if argv is None else list(argv)
    fast = args[:1] in (["serve"], ["run"], ["acp"], ["resident"]) and not {"-h", "--help"} & set(
        args
    )
    parser = _one_parser(commands, args[0]) if fast else build_parser(commands)
    ns = parser.parse_args(argv)
    handler = getattr(ns, "_handler", None)
    if handler is None:
        parser.print_help()
        return 0
    return int(handler(ns) or 0)
