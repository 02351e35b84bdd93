"""One declaration per user operation, exposed as LSP command, CLI subcommand and slash command.

    @action("plan.list", PlanListParams, summary="List plans")
    async def plan_list(app: App, params: PlanListParams) -> PlanList: ...

gives `ndomo.plan.list` over LSP (one object argument), `ndomo plan list --flag …`
on the command line and `/plan list …` in a prompt.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic_core import to_jsonable_python

from ndomo.schema import Schema
from ndomo.validation import describe, problems

if TYPE_CHECKING:
    from ndomo.app import App

# Every module that declares actions. Registered in one place so that the LSP server,
# the CLI and the slash registry see the same set.
ACTION_MODULES: list[str] = [
    "ndomo.features.health",
    "ndomo.features.catalog",
    "ndomo.features.turn",
    "ndomo.features.sessions",
    "ndomo.plan.actions",
    "ndomo.features.approvals",
    "ndomo.features.undo",
    "ndomo.plan.view",
    "ndomo.tools.reflexes.actions",
    "ndomo.agents.actions",
    "ndomo.features.trust",
]


class NoParams(Schema):
    model_config = ConfigDict(extra="forbid")


class ActionError(Exception):
    """A user-facing failure: bad arguments or a refused operation."""

    def __init__(self, message: str, *, field: str | None = None, kind: str = "invalid") -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.kind = kind  # "invalid" (bad arguments) or "failed" (refused / not possible)


Handler = Callable[["App", Any], Awaitable[Any]]


@dataclass(frozen=True)
class Action:
    name: str
    params: type[BaseModel]
    handler: Handler
    summary: str
    surfaces: frozenset[str] = field(default_factory=lambda: frozenset({"lsp", "cli", "slash"}))
    render: Callable[[Any], str] | None = None
    shows_config: bool = False  # its result reports config problems (the CLI prints them once)

    @property
    def command(self) -> str:
        return f"ndomo.{self.name}"

    @property
    def path(self) -> list[str]:
        return self.name.split(".")

    def parse(self, raw: Any) -> BaseModel:
        return parse_params(self.params, raw)

    async def invoke(self, app: App, raw: Any) -> Any:
        params = raw if isinstance(raw, self.params) else self.parse(raw)
        result = await self.handler(app, params)
        return to_jsonable_python(result, by_alias=False)


def describe_validation_error(exc: ValidationError) -> tuple[str, str | None]:
    found = problems(exc)
    return "invalid argument " + describe(exc), (found[0][0] if found else None)


def parse_params(model: type[BaseModel], raw: Any) -> BaseModel:
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ActionError(
            f"expected one object argument, got {type(raw).__name__}", field="(arguments)"
        )
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        message, fld = describe_validation_error(exc)
        raise ActionError(message, field=fld) from None


class ActionRegistry:
    def __init__(self) -> None:
        self._actions: dict[str, Action] = {}

    def add(self, act: Action) -> Action:
        if act.name in self._actions:
            raise ValueError(f"action {act.name!r} declared twice")
        self._actions[act.name] = act
        return act

    def get(self, name: str) -> Action | None:
        if name.startswith("ndomo."):
            name = name[len("ndomo.") :]
        return self._actions.get(name)

    def all(self, surface: str | None = None) -> list[Action]:
        acts = sorted(self._actions.values(), key=lambda a: a.name)
        return [a for a in acts if surface is None or surface in a.surfaces]


REGISTRY = ActionRegistry()
_loaded = False


def action(
    name: str,
    params: type[BaseModel] = NoParams,
    *,
    summary: str = "",
    surfaces: tuple[str, ...] = ("lsp", "cli", "slash"),
    render: Callable[[Any], str] | None = None,
    shows_config: bool = False,
) -> Callable[[Handler], Handler]:
    def deco(fn: Handler) -> Handler:
        doc = (fn.__doc__ or "").strip().splitlines()
        REGISTRY.add(
            Action(
                name=name,
                params=params,
                handler=fn,
                summary=summary or (doc[0] if doc else name),
                surfaces=frozenset(surfaces),
                render=render,
                shows_config=shows_config,
            )
        )
        return fn

    return deco


def load_actions() -> ActionRegistry:
    """Import every declaring module once; returns the filled registry."""
    global _loaded
    if not _loaded:
        for mod in ACTION_MODULES:
            importlib.import_module(mod)
        _loaded = True
    return REGISTRY


class CommandInfo(Schema):
    name: str
    command: str
    cli: str | None
    slash: str | None
    summary: str
    params: dict


@action("commands", summary="List every declared action with its LSP command, CLI and slash forms")
async def commands(app: App, params: NoParams) -> list[CommandInfo]:
    return [
        CommandInfo(
            name=a.name,
            command=a.command,
            cli=("ndomo " + " ".join(a.path)) if "cli" in a.surfaces else None,
            slash=("/" + " ".join(a.path)) if "slash" in a.surfaces else None,
            summary=a.summary,
            params=a.params.model_json_schema(),
        )
        for a in load_actions().all()
    ]
