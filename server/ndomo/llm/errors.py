"""Model failures as one-line, user-facing messages.

The editor shows `str(error)` as is, so every message names the endpoint and
says what to do; callers branch on the subclass, never on the text.
"""

from __future__ import annotations


class ModelError(Exception):
    """Base class: `str(err)` is the message to show the user."""

    def __init__(self, message: str, *, url: str | None = None, status: int | None = None) -> None:
        message = " ".join(message.split())  # one line, whatever the server sent
        super().__init__(message)
        self.message = message
        self.url = url
        self.status = status


class ModelUnreachable(ModelError):
    """Connection refused, unknown host, or timed out while connecting."""


class ModelAuthError(ModelError):
    """401/403: the key is missing or wrong."""


class ModelRateLimited(ModelError):
    """429 that outlived our retries."""

    def __init__(self, message: str, *, url: str | None = None, retry_after: float | None = None) -> None:
        super().__init__(message, url=url, status=429)
        self.retry_after = retry_after


class ModelTimeout(ModelError):
    """Connected, but the server did not answer (or stopped streaming) within the timeout."""


class ModelBadResponse(ModelError):
    """Garbage body, stream cut mid-way, unknown model or missing route (404)."""


class ModelServerError(ModelError):
    """5xx that outlived our retries."""


class ModelRequestRejected(ModelError):
    """Other 4xx: the server refused this request (context too long, bad parameter …)."""
