"""`{{ params.x }}` and `{{ steps.<id>.output }}` substitution: a lookup, never an evaluation."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

PLACEHOLDER = re.compile(r"\{\{\s*(.*?)\s*\}\}", re.S)
_REF = re.compile(
    r"^(?:params\.([A-Za-z_][A-Za-z0-9_]*)|steps\.([A-Za-z_][A-Za-z0-9_-]*)\.output)$"
)


class TemplateError(Exception):
    pass


def parse_ref(expr: str) -> tuple[str, str]:
    """("params", name) or ("steps", id); anything else is an error."""
    m = _REF.match(expr)
    if not m:
        raise TemplateError(
            f"unsupported template expression {{{{ {expr} }}}}; use {{{{ params.NAME }}}} or {{{{ steps.ID.output }}}}"
        )
    return ("params", m.group(1)) if m.group(1) else ("steps", m.group(2))


def references(value: Any) -> list[tuple[str, str]]:
    """Every reference in a nested args value (strings inside dicts and lists)."""
    if isinstance(value, str):
        return [parse_ref(e) for e in PLACEHOLDER.findall(value)]
    if isinstance(value, Mapping):
        return [r for v in value.values() for r in references(v)]
    if isinstance(value, list):
        return [r for v in value for r in references(v)]
    return []


def substitute(value: Any, params: Mapping[str, Any], steps: Mapping[str, str]) -> Any:
    """Fill placeholders. A string that is exactly one `{{ params.x }}` keeps x's type."""
    if isinstance(value, Mapping):
        return {k: substitute(v, params, steps) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, params, steps) for v in value]
    if not isinstance(value, str):
        return value
    whole = PLACEHOLDER.fullmatch(value.strip())
    if whole:
        kind, name = parse_ref(whole.group(1))
        if kind == "params":
            return _lookup(params, name, "parameter")
    return PLACEHOLDER.sub(lambda m: _text(parse_ref(m.group(1)), params, steps), value)


def _lookup(table: Mapping[str, Any], name: str, what: str) -> Any:
    if name not in table:
        raise TemplateError(f"unknown {what} '{name}'")
    return table[name]


def _text(ref: tuple[str, str], params: Mapping[str, Any], steps: Mapping[str, str]) -> str:
    kind, name = ref
    if kind == "params":
        v = _lookup(params, name, "parameter")
        if isinstance(v, bool):
            return "true" if v else "false"
        return "" if v is None else str(v)
    return str(_lookup(steps, name, "step (or it has not run yet)"))
