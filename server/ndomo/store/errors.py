"""Store errors: each says what was wrong and which record, so callers can show it as is."""

from __future__ import annotations


class StoreError(Exception):
    """Base of every error the plan store raises on purpose."""

    kind = "failed"

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


class NotFound(StoreError):
    kind = "invalid"


class Invalid(StoreError):
    kind = "invalid"


class InvalidTransition(StoreError):
    kind = "failed"


class Refused(StoreError):
    """The operation is understood but not allowed in the current state."""

    kind = "failed"

    def __init__(
        self, message: str, *, field: str | None = None, blockers: list[str] | None = None
    ):
        super().__init__(message, field=field)
        self.blockers = list(blockers or [])


class WriteOnceViolation(StoreError):
    """A trigger refused to overwrite a write-once column."""

    kind = "failed"
