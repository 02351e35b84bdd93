"""A reflex: a named, parameterised sequence of tool calls, declared in YAML."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from ndomo.schema import Schema
from ndomo.tools.reflexes.template import TemplateError, references

NAME = re.compile(r"^[a-z][a-z0-9_]{0,47}$")
STEP_ID = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,47}$")
MAX_STEPS = 50


class ReflexParam(Schema):
    model_config = ConfigDict(extra="forbid")
    type: Literal["string", "integer", "number", "boolean"] = "string"
    description: str = ""
    required: bool = True
    default: Any = None


class ReflexStep(Schema):
    """In YAML `{id?: x, <tool>: {args}}`; parsed into tool + args."""

    model_config = ConfigDict(extra="forbid")
    id: str | None = None
    tool: str
    args: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _from_yaml(cls, raw: Any) -> Any:
        if not isinstance(raw, dict) or "tool" in raw:
            return raw
        rest = {k: v for k, v in raw.items() if k != "id"}
        if len(rest) != 1:
            names = ", ".join(map(str, rest)) or "none"
            raise ValueError(f"a step names exactly one tool besides 'id' (found: {names})")
        ((tool, args),) = rest.items()
        if args is None:
            args = {}
        if not isinstance(args, dict):
            raise ValueError(f"the arguments of '{tool}' must be a mapping")
        return {"id": raw.get("id"), "tool": str(tool), "args": args}

    @field_validator("id")
    @classmethod
    def _id(cls, v: str | None) -> str | None:
        if v is not None and not STEP_ID.match(v):
            raise ValueError("step id: a letter or '_' then letters, digits, '_' or '-'")
        return v


class Reflex(Schema):
    model_config = ConfigDict(extra="forbid")
    name: str
    description: str = ""
    params: dict[str, ReflexParam] = Field(default_factory=dict)
    steps: list[ReflexStep] = Field(min_length=1, max_length=MAX_STEPS)
    source: str | None = None  # workspace-relative file it came from

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not NAME.match(v):
            raise ValueError("name: lower-case letters, digits and '_', starting with a letter")
        return v

    @model_validator(mode="after")
    def _refs(self) -> Reflex:
        seen: set[str] = set()
        for i, step in enumerate(self.steps, 1):
            try:
                refs = references(step.args)
            except TemplateError as exc:
                raise ValueError(f"step {i} ({step.tool}): {exc}") from None
            for kind, name in refs:
                if kind == "params" and name not in self.params:
                    raise ValueError(f"step {i} ({step.tool}) uses unknown parameter '{name}'")
                if kind == "steps" and name not in seen:
                    raise ValueError(
                        f"step {i} ({step.tool}) uses the output of '{name}', which is not an earlier step"
                    )
            if step.id:
                if step.id in seen:
                    raise ValueError(f"step id '{step.id}' is used twice")
                seen.add(step.id)
        return self

    @property
    def tool_name(self) -> str:
        return f"reflex_{self.name}"


class ReflexProblem(Schema):
    path: str
    message: str


class StepOutcome(Schema):
    index: int
    id: str | None
    tool: str
    status: str
    output: str


class ReflexRun(Schema):
    reflex: str
    mode: str
    ok: bool
    steps: list[StepOutcome]
    not_run: list[str] = []  # "3 (write)" … after a stop
    message: str = ""

    def render(self) -> str:
        lines = [f"reflex '{self.reflex}' ({self.mode}): {self.message}"]
        for s in self.steps:
            label = f"{s.index}" + (f" [{s.id}]" if s.id else "")
            lines.append(f"step {label} {s.tool} → {s.status}:\n{s.output}")
        if self.not_run:
            lines.append("not run: " + ", ".join(self.not_run))
        return "\n".join(lines)
