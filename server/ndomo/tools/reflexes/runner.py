"""Running a reflex: each step through the tool registry under the invoking context's mode,
so fences, guards and permissions apply to every step; the first failed step stops it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from ndomo.runtime.context import TurnContext
from ndomo.runtime.plugins import Plugins
from ndomo.tools.reflexes.model import Reflex, ReflexRun, StepOutcome
from ndomo.tools.reflexes.template import TemplateError, substitute
from ndomo.validation import describe

MAX_DEPTH = 3  # a reflex may call a reflex, not forever


@dataclass
class _Nesting:
    """How deep reflexes run inside one another in this turn."""

    depth: int = 0


_TYPES: dict[str, Any] = {"string": str, "integer": int, "number": float, "boolean": bool}


def params_model(reflex: Reflex) -> type[BaseModel]:
    fields: dict[str, Any] = {}
    for name, spec in reflex.params.items():
        typ = _TYPES[spec.type]
        if spec.required and spec.default is None:
            fields[name] = (typ, ...)
        else:
            fields[name] = (typ | None, spec.default)
    return create_model(
        f"Reflex_{reflex.name}", __config__=ConfigDict(extra="forbid", strict=False), **fields
    )


def check_params(reflex: Reflex, raw: dict[str, Any]) -> dict[str, Any]:
    """Validated parameter values; ValueError with a readable message otherwise."""
    try:
        return params_model(reflex).model_validate(raw or {}).model_dump()
    except ValidationError as exc:
        why = describe(exc, unknown="unknown parameter", whole="(params)")
        raise ValueError(f"invalid parameters for reflex '{reflex.name}': {why}") from None


async def run_reflex(ctx: TurnContext, reflex: Reflex, params: dict[str, Any]) -> ReflexRun:
    nesting = ctx.instance(_Nesting, _Nesting)
    depth = nesting.depth
    run = ReflexRun(reflex=reflex.name, mode=ctx.mode, ok=False, steps=[])
    if depth >= MAX_DEPTH:
        run.message = f"refused: reflexes nested more than {MAX_DEPTH} deep"
        return run
    try:
        values = check_params(reflex, params)
    except ValueError as exc:
        run.message = str(exc)
        return run
    registry = Plugins.of(ctx).tools
    outputs: dict[str, str] = {}
    stopped = False
    nesting.depth = depth + 1
    try:
        for i, step in enumerate(reflex.steps, 1):
            try:
                args = substitute(step.args, values, outputs)
            except TemplateError as exc:
                run.steps.append(
                    StepOutcome(
                        index=i, id=step.id, tool=step.tool, status="failed", output=str(exc)
                    )
                )
                stopped = True
                break
            result = await registry.execute(ctx, step.tool, args)
            run.steps.append(
                StepOutcome(
                    index=i, id=step.id, tool=step.tool, status=result.status, output=result.content
                )
            )
            if step.id:
                outputs[step.id] = result.content
            if not result.ok:
                stopped = True
                break
    finally:
        nesting.depth = depth
    done = len(run.steps)
    last = run.steps[-1] if run.steps else None
    run.ok = not stopped and done == len(reflex.steps)
    run.not_run = [f"{j} ({s.tool})" for j, s in enumerate(reflex.steps[done:], done + 1)]
    if run.ok:
        run.message = f"all {done} steps done"
    elif last is not None:
        run.message = f"stopped at step {last.index} ({last.tool}): {last.status}"
    return run
