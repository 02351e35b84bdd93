"""`commands`: every declared action with its LSP command, CLI and slash forms."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ndomo.actions import REGISTRY, NoParams, action
from ndomo.schema import Schema

if TYPE_CHECKING:
    from ndomo.app import App


class CommandInfo(Schema):
    name: str
    command: str
    cli: str | None
    slash: str | None
    summary: str
    params: dict


@action(
    "commands",
    summary="List every declared action with its LSP command, CLI and slash forms",
    read_only=True,
)
async def commands(app: App, params: NoParams) -> list[CommandInfo]:
    # Run through a front end, which loaded every declaring module (ndomo.compose.actions)
    # before it could find this action.
    return [
        CommandInfo(
            name=a.name,
            command=a.command,
            cli=("ndomo " + " ".join(a.path)) if "cli" in a.surfaces else None,
            slash=("/" + " ".join(a.path)) if "slash" in a.surfaces else None,
            summary=a.summary,
            params=a.params.model_json_schema(),
        )
        for a in REGISTRY.all()
    ]
