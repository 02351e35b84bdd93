"""The argparse pieces every command shares: flags generated from a pydantic model, the
workspace flag, exit codes, and `Subcommand` (a top-level command that is not an action:
`serve`, `run`).

A library below `terminal/cli.py`: the modules that define a command (`terminal/serve.py`,
`terminal/run.py`) and the slash commands (`runtime/slash.py`) import this, never the
CLI itself, so nothing below the entry point depends on it. Which commands exist is said
by the composition root (`ndomo.compose.command_line`).
"""

from __future__ import annotations

import argparse
import json
import types as pytypes
import typing
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import BaseModel


@dataclass(frozen=True)
class Subcommand:
    """A top-level command that is not an action: its flags (`setup`) and what runs it."""

    name: str
    setup: Callable[[argparse.ArgumentParser], None]
    handler: Callable[[argparse.Namespace], int]
    help: str


EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2

WORKSPACE_HELP = (
    "project folder holding .ndomo/ (default: the nearest folder upward from here with .git, "
    "pyproject.toml, package.json, go.mod, Cargo.toml or .ndomo/; $HOME and / never count)"
)


def find_workspace(start: Path) -> Path | None:
    """The project root from `start` upward, by markers (same rule as an editor in
    single-file mode); None when there is none."""
    from ndomo.app import find_root

    return find_root(start)


def resolve_workspace(flag: str | None) -> tuple[Path | None, str | None]:
    """(root, error): `--workspace` is the root as given (not $HOME or /), else markers
    from the current folder; no root is not an error here (commands that need a store say so)."""
    from ndomo.app import given_root

    if not flag:
        return find_workspace(Path.cwd()), None
    path = Path(flag).expanduser()
    if not path.is_dir():
        return (
            None,
            f"ndomo: workspace {path} is not a folder; pass an existing project folder to --workspace",
        )
    root = given_root(path)
    if root is None:
        return (
            None,
            f"ndomo: {path.resolve()} cannot be a workspace ($HOME and / never hold .ndomo/); pass the project folder",
        )
    return root, None


# -- flags from a pydantic model -------------------------------------------------------


def _unwrap_optional(ann: Any) -> Any:
    origin = typing.get_origin(ann)
    if origin in (typing.Union, pytypes.UnionType):
        args = [a for a in typing.get_args(ann) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return ann


def _json_arg(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text  # let pydantic name the field and the problem


def add_model_flags(parser: argparse.ArgumentParser, model: type[BaseModel]) -> None:
    from pydantic import BaseModel

    for name, f in model.model_fields.items():
        flag = "--" + name.replace("_", "-")
        ann = _unwrap_optional(f.annotation)
        origin = typing.get_origin(ann)
        helptext = f.description or ""
        kw: dict[str, Any] = {"dest": name, "default": argparse.SUPPRESS, "help": helptext}
        if ann is bool:
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, **kw)
            continue
        if origin in (list, tuple, set):
            inner = typing.get_args(ann)[0] if typing.get_args(ann) else str
            if isinstance(inner, type) and issubclass(inner, BaseModel):
                parser.add_argument(flag, type=_json_arg, metavar="JSON", **kw)
            else:
                parser.add_argument(flag, nargs="*", metavar=name.upper(), **kw)
            continue
        if origin is dict or ann is dict or (isinstance(ann, type) and issubclass(ann, BaseModel)):
            parser.add_argument(flag, type=_json_arg, metavar="JSON", **kw)
            continue
        if origin is typing.Literal:
            kw["metavar"] = "{" + ",".join(str(a) for a in typing.get_args(ann)) + "}"
        parser.add_argument(flag, required=f.is_required(), **kw)
