"""One declaration per user operation, exposed as LSP command, CLI subcommand and slash command.

    @action("plan.list", PlanListParams, summary="List plans")
    async def plan_list(app: App, params: PlanListParams) -> PlanList: ...

gives `ndomo.plan.list` over LSP (one object argument), `ndomo plan list --flag …`
on the command line and `/plan list …` in a prompt.

This is the base every declaring module imports (low in the house: `app.py` imports
`ActionError`). Which modules declare actions is said in one place above everything,
the composition root (`ndomo.compose.actions`), which imports them and fills REGISTRY.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic_core import to_jsonable_python

from ndomo.errors import ActionError
from ndomo.schema import Schema
from ndomo.validation import describe, problems

if TYPE_CHECKING:
    from ndomo.app import App
    from ndomo.store.store import PlanStore


class NoParams(Schema):
    model_config = ConfigDict(extra="forbid")


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
    # It only reads: the editor's plan diagnostics are not refreshed after it runs.
    read_only: bool = False

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


# Filled as the declaring modules are imported (by the composition root).
REGISTRY = ActionRegistry()


def action(
    name: str,
    params: type[BaseModel] = NoParams,
    *,
    summary: str = "",
    surfaces: tuple[str, ...] = ("lsp", "cli", "slash"),
    render: Callable[[Any], str] | None = None,
    shows_config: bool = False,
    read_only: bool = False,
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
                read_only=read_only,
            )
        )
        return fn

    return deco


@asynccontextmanager
async def store_of(app: App) -> AsyncIterator[PlanStore]:
    """The App's store, its refusals (no such plan, bad status …) as the action's error."""
    from ndomo.store.errors import StoreError

    try:
        yield await app.store()
    except StoreError as exc:
        raise ActionError(exc.message, field=exc.field, kind=exc.kind) from None
