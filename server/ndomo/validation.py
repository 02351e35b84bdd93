"""A pydantic ValidationError as one readable line, the same way everywhere: action
params (LSP, CLI, slash), tool arguments from the model, reflex parameters and files."""

from __future__ import annotations

from pydantic import ValidationError


def problems(
    exc: ValidationError, *, unknown: str = "unknown argument", whole: str = "(arguments)"
) -> list[tuple[str, str]]:
    """(dotted field, message) per error; `unknown` names an extra field, `whole` the
    object itself (an error with no location)."""
    out = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or whole
        msg = unknown if err["type"] == "extra_forbidden" else err["msg"]
        out.append((loc, msg.removeprefix("Value error, ")))
    return out


def describe(
    exc: ValidationError, *, unknown: str = "unknown argument", whole: str = "(arguments)"
) -> str:
    """`field: message; field: message`."""
    return "; ".join(f"{loc}: {msg}" for loc, msg in problems(exc, unknown=unknown, whole=whole))
