"""HTTP to an OpenAI-compatible server (`http.Client`: asyncio and h11), without the OpenAI
SDK.

The SDK cost every `ndomo run` ~0.4 s of imports (its types and its own httpx2) and every
streamed request ~3.6 ms before the first chunk over a plain httpx request with the same
body (docs/performance.md, issue 31). What ndomo used of it is here: the request, the SDK's
retry policy, its error fields (`status_code`, `body`, `message`, `response`, read by
`errors.map_error`) and its server-sent-events reading.

Retries follow the SDK: connection failures, timeouts, 408, 409, 429 and 5xx are retried
`max_retries` times; `x-should-retry` decides when present; the wait is the server's
`retry-after-ms` / `retry-after` (seconds or an HTTP date) when it is 60 s or less, else
0.5 s doubling up to 8 s, less up to 25 % jitter. A Retry-After over 60 s is not waited:
the error is reported with it at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import random
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from ndomo import __version__

from . import http

INITIAL_DELAY_S = 0.5
MAX_DELAY_S = 8.0
MAX_RETRY_AFTER_S = 60.0


class StatusError(Exception):
    """A 4xx/5xx answer, with the fields the SDK's `APIStatusError` had: `status_code`,
    `body` (the JSON's `error` object, or the JSON, or the text), `message`, `response`."""

    def __init__(self, response: http.Response) -> None:
        text = response.text.strip()
        body: Any = text
        message = f"Error code: {response.status_code}"
        with contextlib.suppress(ValueError):  # not JSON: the text is the body
            body = json.loads(text)
        error = body.get("error", body) if isinstance(body, dict) else None
        said = error.get("message") if isinstance(error, dict) else None
        if isinstance(said, str) and said:
            message += f" - {said}"
        super().__init__(message)
        self.message = message
        self.response = response
        self.status_code = response.status_code
        self.body = error if isinstance(body, dict) else body


class StreamError(Exception):
    """An error event inside a stream (`data: {"error": {...}}`): no status, the server's words."""

    def __init__(self, message: str, body: Any) -> None:
        super().__init__(message)
        self.message = message
        self.body = body


# What `errors.map_error` reads as "the SDK" for this transport: a timeout, then any other
# failure to reach the server (refused, reset, closed without an answer).
ERRORS = SimpleNamespace(
    APITimeoutError=http.TimeoutException, APIConnectionError=http.TransportError
)


def retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds the server asks to wait: `retry-after-ms`, then `retry-after` as a number, then
    as an HTTP date; None when it says nothing readable."""
    for name, divisor in (("retry-after-ms", 1000), ("retry-after", 1)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return float(value) / divisor
        except ValueError:
            continue
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        import email.utils  # an HTTP date is rare: the email package is ~10 ms of every run

        date = email.utils.parsedate_tz(value)
        return None if date is None else float(email.utils.mktime_tz(date) - time.time())
    except (TypeError, ValueError, OverflowError):
        return None


def should_retry(response: http.Response) -> bool:
    wait = retry_after(response.headers)
    if wait is not None and math.isfinite(wait) and wait > MAX_RETRY_AFTER_S:
        return False
    said = response.headers.get("x-should-retry")
    if said in ("true", "false"):
        return said == "true"
    status = response.status_code
    return status in (408, 409, 429) or status >= 500


def retry_wait(attempt: int, headers: Mapping[str, str] | None) -> float:
    """The wait before retry number `attempt` (0 for the first)."""
    wait = retry_after(headers) if headers is not None else None
    if wait is not None and math.isfinite(wait) and 0 < wait <= MAX_RETRY_AFTER_S:
        return wait
    delay = min(INITIAL_DELAY_S * 2.0 ** min(attempt, 1000), MAX_DELAY_S)
    return max(delay * (1 - 0.25 * random.random()), 0.0)


@dataclass
class Event:
    """One server-sent event: its `event` field (None when absent) and its joined data lines."""

    event: str | None
    data: str


async def events(response: http.Response) -> AsyncIterator[Event]:
    """The response's server-sent events (the WHATWG rules ndomo's servers use: `data:` lines
    joined by newlines, `event:`, comments and other fields skipped, a blank line ends one)."""
    name: str | None = None
    data: list[str] = []
    async for line in response.aiter_lines():
        if not line:
            if data:
                yield Event(name, "\n".join(data))
            name, data = None, []
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "data":
            data.append(value)
        elif field == "event":
            name = value
    if data:  # a server that ends without the last blank line
        yield Event(name, "\n".join(data))


class Transport:
    """One keep-alive connection pool to `base_url`, requests with retries."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str,
        timeout_s: float,
        max_retries: int,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.max_retries = max_retries
        # certificates are loaded with the first https connection: a plain http server (the
        # local ones) never pays the 40-100 ms
        self.http = http.Client(
            timeout=timeout_s,
            connect_timeout=min(10.0, timeout_s),
            headers={
                "authorization": f"Bearer {api_key}",
                "accept": "application/json",
                "user-agent": f"ndomo/{__version__}",  # some hosts' firewalls refuse none
                **(headers or {}),
            },
            follow_redirects=True,
        )

    async def aclose(self) -> None:
        await self.http.aclose()

    async def open(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        retries: int | None = None,
        timeout_s: float | None = None,
    ) -> http.Response:
        """The response, its body unread (stream it, or `aread`): a 2xx after the retries.
        `body` is sent as JSON, or as it is when bytes. Raises `StatusError` for a 4xx/5xx,
        `http.TimeoutException` / `http.TransportError` when the server cannot be reached;
        the caller closes the response."""
        content = (
            None
            if body is None
            else body
            if isinstance(body, bytes)  # JSON already (`wire.chat_body`)
            else json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
        )
        headers = {"content-type": "application/json"} if content is not None else None
        budget = self.max_retries if retries is None else retries
        attempt = 0
        while True:
            try:
                response = await self.http.send(
                    method,
                    self.base_url + path,
                    content=content,
                    headers=headers,
                    timeout=timeout_s,
                )
            except http.UnsupportedProtocol:
                raise  # a URL or proxy setting to fix, not a server to wait for
            except http.TransportError:
                if attempt >= budget:
                    raise
                await asyncio.sleep(retry_wait(attempt, None))
                attempt += 1
                continue
            if response.is_success:
                return response
            try:
                await response.aread()
            finally:
                await response.aclose()
            if attempt >= budget or not should_retry(response):
                raise StatusError(response)
            await asyncio.sleep(retry_wait(attempt, response.headers))
            attempt += 1


def retryable(exc: BaseException) -> bool:
    """Would `Transport.open` have retried this? (for "after N retries" in the message)"""
    if isinstance(exc, http.TransportError):
        return not isinstance(exc, http.UnsupportedProtocol)
    response = getattr(exc, "response", None)
    return isinstance(response, http.Response) and should_retry(response)
