"""The composition root: the one module that names ndomo's features and front ends and
wires them together. Nothing in ndomo imports it but `__main__`; it imports what it wires
with plain `import` statements, so the import graph (tests/unit/test_architecture.py)
sees every edge — and no other module loads one of ndomo's own by name.

- `actions()`: the modules that declare actions (`@action`), imported once; every front
  end (LSP commands, the CLI, slash commands) takes them from the registry this fills.
- `features()` / `plugins()`: the runtime's features (`setup(plugins)`), then those of
  installed packages (the `ndomo.features` entry points, in name order).
- `main()`: the `ndomo` command — `serve`, `run` and one subcommand per action.
- `serve`'s warm-up: what the language server loads after `initialized` (`_core`,
  `_extras`), off the event loop.

A new feature is its folder plus its entry in `features()` (and `actions()` when it
declares actions) — or, outside ndomo, an entry point. The imports stay inside functions:
`ndomo serve` answers `initialize` before the features load (docs/performance.md).
"""

from __future__ import annotations

import sys

# Nothing else at the top: every `ndomo` process imports this module before it knows
# what it runs, and a run handed to the resident process (ndomo.terminal.resident) pays
# for no more than this module and the hand-over — `logging` alone is ~20 ms. (mypy reads
# a `TYPE_CHECKING` constant as typing's.)
TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType

    from ndomo.actions import ActionRegistry
    from ndomo.lsp.warmup import Loads
    from ndomo.runtime.plugins import Plugins, Setup
    from ndomo.runtime.slash import CommandSpec
    from ndomo.terminal.args import Subcommand
    from ndomo.terminal.cli import Commands

# Entry-point group of features from other packages (same `setup(plugins)` contract).
ENTRY_POINT_GROUP = "ndomo.features"

_wired = False


def action_modules() -> tuple[ModuleType, ...]:
    """The modules that declare actions (`@action`); importing them fills the registry."""
    from ndomo.agents import actions as agent_actions
    from ndomo.features import (
        approvals,
        catalog,
        commands,
        health,
        memory,
        sessions,
        trust,
        turn,
        undo,
    )
    from ndomo.features.checkpoints import rewind
    from ndomo.features.review import actions as review
    from ndomo.plan import actions as plan_actions
    from ndomo.plan import view
    from ndomo.tools.mcp import actions as mcp_actions
    from ndomo.tools.reflexes import actions as reflex_actions

    return (
        health,
        catalog,
        commands,
        turn,
        sessions,
        memory,
        plan_actions,
        view,
        approvals,
        undo,
        rewind,
        review,
        reflex_actions,
        trust,
        mcp_actions,
        agent_actions,
    )


def actions() -> ActionRegistry:
    """Every declared action: the declaring modules imported (once), the registry filled."""
    from ndomo.actions import REGISTRY

    action_modules()
    _wire()
    return REGISTRY


def _wire() -> None:
    """A runtime built without plugins (`Runtime.of(app)` in an action) gets these
    features: set before any action can run, since every front end loads the actions first."""
    global _wired
    if not _wired:
        from ndomo.runtime.plugins import use_default

        use_default(plugins)
        _wired = True


def features() -> list[Setup]:
    """The built-in features in the order they register: hooks of equal priority run in
    it, and the modes are offered in it (discussion first: the default)."""
    from ndomo import plan
    from ndomo.agents import feature as agents
    from ndomo.features import builtin, checkpoints, instructions, recovery
    from ndomo.modes import autopilot, brainstorming, discussion
    from ndomo.tools import code, files, interaction, mcp, reflexes, shell, web

    return [
        builtin.setup,
        _slash_actions,
        instructions.setup,
        discussion.setup,
        brainstorming.setup,
        autopilot.setup,
        recovery.setup,
        shell.setup,
        web.setup,
        interaction.setup,
        reflexes.setup,
        mcp.setup,
        agents.setup,
        checkpoints.setup,  # after every guard's feature: it snapshots only a call they let through
        files.setup,
        code.setup,
        plan.setup,
    ]


def _slash_actions(plugins: Plugins) -> None:
    """Every action with the slash surface is a `/` command (the built-in /mode, /agent,
    /new and /help win a clash). Built when a `/` command is first looked up: a turn that
    is not one (every `ndomo run "…"`) does not import the action modules."""
    plugins.slash.later(_action_commands)


def _action_commands() -> list[CommandSpec]:
    from ndomo.runtime.slash import action_specs

    return action_specs(actions().all("slash"))


def installed_features() -> list[Setup]:
    """The `setup` of each `ndomo.features` entry point of an installed package."""
    from importlib.metadata import entry_points

    builtin = {f.__module__ for f in features()}
    found = sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ep.name)
    setups = []
    for ep in found:
        if ep.module in builtin:
            continue
        loaded = ep.load()  # a module with `setup`, or `module:function`
        setups.append(getattr(loaded, "setup", loaded))
    return setups


def plugins() -> Plugins:
    """The runtime's registries: the built-in features, then the installed ones."""
    from ndomo.runtime.plugins import build_plugins

    _wire()  # a runtime an action builds without plugins gets these, actions loaded or not
    return build_plugins([*features(), *installed_features()])


# -- the command line -------------------------------------------------------------------


def command_line() -> Commands:
    """What `ndomo` offers, each part built only when the command needs it."""
    from ndomo.terminal.cli import Commands

    return Commands(serve=_serve, others=_others, actions=actions)


def _serve() -> Subcommand:
    from ndomo.terminal import serve

    return serve.command(server_loads())


def _others() -> list[Subcommand]:
    import functools

    from ndomo.acp import command as acp
    from ndomo.terminal import run, trust
    from ndomo.terminal.resident import command as resident

    # One set of registries per process: `--mode`'s check and the turn share it.
    once = functools.cache(plugins)
    return [run.command(once), trust.command(), acp.command(once), resident.command(in_process)]


def main(argv: list[str] | None = None) -> int:
    """The `ndomo` command (the package's console script and `python -m ndomo`): a run
    goes to the resident process when one answers (ndomo.terminal.resident), else runs
    here and starts one for the next run."""
    args = sys.argv[1:] if argv is None else list(argv)
    if args[:1] != ["run"]:  # `serve`, `acp` …: not even the client's imports
        return in_process(args)
    from ndomo.terminal.resident import client as resident

    handed = resident.hand_over(args)
    if handed.code is not None:
        return handed.code
    code = in_process(args)
    if handed.start:
        resident.start(handed.where, handed.key)
    return code


def in_process(argv: list[str]) -> int:
    """The command, run by this process (a resident's child runs it too)."""
    from ndomo import startup
    from ndomo.terminal.cli import main as cli_main

    startup.hold()  # until the command's registries are built (ndomo.startup)
    try:
        return cli_main(argv, command_line())
    finally:
        startup.release()  # what is left is frozen: the collection at exit skips it


# -- the language server's warm-up -------------------------------------------------------


def server_loads() -> Loads:
    """What `ndomo serve` loads, and when (see ndomo.lsp.warmup)."""
    from ndomo.lsp.warmup import Loads

    return Loads(actions=actions, core=_core, plugins=plugins, extras=_extras)


def _core() -> tuple[ModuleType, ...]:
    """What every command needs, imported in a thread after `initialized`, before the App
    is published: the actions, the runtime, the store, the editor's host."""
    from ndomo import app
    from ndomo.lsp import host
    from ndomo.runtime import runtime
    from ndomo.store import store

    actions()
    return (app, host, runtime, store)


def every_module() -> list[str]:
    """Every ndomo module but the entry script (`python -m ndomo`), by name."""
    import pkgutil

    import ndomo

    return [
        m.name
        for m in pkgutil.walk_packages(ndomo.__path__, "ndomo.")
        if m.name != "ndomo.__main__"
    ]


# Front ends `ndomo serve` never runs: not warmed. ACP's is ~0.5 s of its SDK's schema
# models, imported in the warm-up's thread while the first turns want the GIL.
_NOT_SERVED = ("ndomo.acp",)


def _extras() -> list[str]:
    """The rest of ndomo (parsers, model clients, tools' lazy imports …), so the first turn
    neither waits for those imports nor makes the server's memory jump; not the other
    front ends. A walk, not a list: nothing to keep up to date, and the root is the top
    floor, so these edges point down."""
    import importlib
    import logging

    log = logging.getLogger("ndomo")
    failed = []
    for name in every_module():
        if any(name == f or name.startswith(f + ".") for f in _NOT_SERVED):
            continue
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - an optional library missing is fine: its tool reports it when used
            log.debug("warm-up could not import %s", name, exc_info=True)
            failed.append(name)
    return failed
