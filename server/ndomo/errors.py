"""The user-facing failure every floor may raise: below the App, which raises it when a
workspace has no store, and below the actions that report it."""

from __future__ import annotations


class ActionError(Exception):
    """A user-facing failure: bad arguments or a refused operation."""

    def __init__(self, message: str, *, field: str | None = None, kind: str = "invalid") -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.kind = kind  # "invalid" (bad arguments) or "failed" (refused / not possible)
