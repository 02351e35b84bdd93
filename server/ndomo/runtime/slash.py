"""Slash commands: a prompt starting with `/` is a command and never reaches the model.

Built-ins (`/mode`, `/agent`, `/new`, `/help`) are registered by features; every action
is `/<group> <verb> --flag value …` automatically. A feature whose commands come and go
(an MCP server's prompts) adds a lister: its commands are shown by `/help` and the
front ends' command lists; the feature handles them itself before the dispatch.
"""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ndomo.actions import Action
    from ndomo.app import App
    from ndomo.runtime.context import TurnContext

SlashHandler = Callable[["TurnContext", list[str]], Awaitable[Any]]
# the commands a feature offers now: in a turn (the context given) it may do the turn's
# work to know them (start servers); outside one, what it knows already
SlashLister = Callable[["App", "TurnContext | None"], Awaitable[list["CommandSpec"]]]


class SlashError(Exception):
    pass


@dataclass(frozen=True)
class CommandSpec:
    name: str
    handler: SlashHandler
    help: str
    aliases: tuple[str, ...] = ()
    category: str = "builtin"
    usage: str = ""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse would exit the process
        raise SlashError(message)


@dataclass
class SlashCommandRegistry:
    _specs: dict[str, CommandSpec] = field(default_factory=dict)
    _aliases: dict[str, str] = field(default_factory=dict)
    listers: list[SlashLister] = field(default_factory=list)
    # Commands built on first use (`later`): a turn whose prompt is no `/` command never
    # builds them (the action-backed commands import every action's module).
    _later: list[Callable[[], Iterable[CommandSpec]]] = field(default_factory=list)

    def add(self, spec: CommandSpec) -> None:
        for name in (spec.name, *spec.aliases):
            if name in self._specs or name in self._aliases:
                raise ValueError(f"slash command /{name} registered twice")
        self._specs[spec.name] = spec
        for a in spec.aliases:
            self._aliases[a] = spec.name

    def later(self, make: Callable[[], Iterable[CommandSpec]]) -> None:
        """Commands `make` builds when a command is first looked up; one whose name (or an
        alias) is registered by then is left out: the registered one wins the clash."""
        self._later.append(make)

    def _built(self) -> None:
        while self._later:
            make = self._later.pop(0)
            for spec in make():
                if not any(self._known(n) for n in (spec.name, *spec.aliases)):
                    self.add(spec)

    def _known(self, name: str) -> bool:
        return name in self._specs or name in self._aliases

    def has(self, name: str) -> bool:
        self._built()
        return self._known(name)

    def specs(self) -> list[CommandSpec]:
        self._built()
        return sorted(self._specs.values(), key=lambda s: s.name)

    async def listed(self, app: App, ctx: TurnContext | None = None) -> list[CommandSpec]:
        """Every command to show: the registered ones and the listers' (a name registered
        already is not shown twice)."""
        specs = self.specs()
        for lister in self.listers:
            specs += [s for s in await lister(app, ctx) if not self.has(s.name)]
        return specs

    def resolve(self, words: list[str]) -> tuple[CommandSpec, list[str]] | None:
        """Longest match: `/plan list` beats `/plan` when both exist."""
        self._built()
        for n in (2, 1):
            if len(words) >= n:
                name = " ".join(words[:n])
                name = self._aliases.get(name, name)
                if name in self._specs:
                    return self._specs[name], words[n:]
        return None

    async def dispatch(self, ctx: TurnContext, text: str) -> tuple[bool, Any]:
        """(handled, payload). A `/` prompt that names no command is an error, not a model call."""
        if not text.startswith("/") or text.startswith("//"):
            return False, None
        try:
            words = shlex.split(text[1:])
        except ValueError as exc:
            raise SlashError(f"cannot parse {text!r}: {exc}") from None
        if not words:
            raise SlashError("empty slash command; try /help")
        found = self.resolve(words)
        if found is None:
            raise SlashError(f"unknown command /{words[0]}; try /help")
        spec, rest = found
        return True, await spec.handler(ctx, rest)


def action_specs(actions: Iterable[Action]) -> list[CommandSpec]:
    """Each action as `/<group> <verb> --flags`."""
    from ndomo.actions import ActionError
    from ndomo.terminal.args import add_model_flags

    specs = []
    for act in actions:
        # Each parser is built on the command's first use: building ~40 of them with every
        # set of registries was ~40 ms of each `ndomo run` and server start.
        parsers: list[_Parser] = []

        async def handler(ctx: TurnContext, args: list[str], act=act, parsers=parsers) -> Any:
            if not parsers:
                parsers.append(_Parser(prog="/" + " ".join(act.path), add_help=False))
                add_model_flags(parsers[0], act.params)
            ns = parsers[0].parse_args(args)
            try:
                return await act.invoke(ctx.app, vars(ns))
            except ActionError as exc:
                raise SlashError(exc.message) from None

        specs.append(
            CommandSpec(
                name=" ".join(act.path), handler=handler, help=act.summary, category="action"
            )
        )
    return specs
