"""Translate OpenAI/Anthropic SDK exceptions into ModelError subclasses.

Both SDKs share exception names (APIConnectionError, APITimeoutError,
APIStatusError, …), so one mapper serves both; it receives the SDK module.
"""

from __future__ import annotations

import asyncio
import socket
from types import ModuleType
from typing import Any, Awaitable, Callable, TypeVar

from .errors import (
    ModelAuthError,
    ModelBadResponse,
    ModelError,
    ModelRateLimited,
    ModelRequestRejected,
    ModelServerError,
    ModelTimeout,
    ModelUnreachable,
)
from .retry import RetryPolicy, parse_retry_after

T = TypeVar("T")

RETRYABLE_STATUS = {408, 409, 429}


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and cur not in seen:
        seen.append(cur)
        cur = cur.__cause__ or cur.__context__
    return seen


def connect_failure_reason(exc: BaseException) -> str:
    """Why a connection failed, in a few words ("connection refused", "host not found", …)."""
    chain = _chain(exc)
    names = {type(e).__name__ for e in chain}
    text = " ".join(str(e) for e in chain).lower()
    if "ConnectTimeout" in names:
        return "timed out connecting"
    if any(isinstance(e, ConnectionRefusedError) for e in chain) or "refused" in text:
        return "connection refused"
    if any(isinstance(e, socket.gaierror) for e in chain) or any(
        s in text for s in ("name or service not known", "nodename nor servname", "getaddrinfo", "name resolution")
    ):
        return "host not found"
    if "ssl" in text or "certificate" in text:
        return "TLS handshake failed"
    root = chain[-1]
    detail = str(root).strip() or type(root).__name__
    return f"connection failed: {detail}"[:200]


def is_connect_phase(exc: BaseException) -> bool:
    """True when no byte of the request reached a server (safe to call it 'unreachable')."""
    names = {type(e).__name__ for e in _chain(exc)}
    return bool(names & {"ConnectError", "ConnectTimeout", "ConnectionRefusedError", "gaierror"})


def server_message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    msg: Any = None
    if isinstance(body, dict):
        msg = body.get("message")
        if msg is None and isinstance(body.get("error"), dict):
            msg = body["error"].get("message")
        elif msg is None and isinstance(body.get("error"), str):
            msg = body["error"]
    elif isinstance(body, str):
        msg = body
    if not msg:
        msg = getattr(exc, "message", None) or str(exc)
    return " ".join(str(msg).split())[:300]


def status_of(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None


def retry_after_of(exc: BaseException) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    try:
        return parse_retry_after(dict(headers) if headers is not None else None)
    except Exception:  # a header we cannot read must not hide the real error
        return None


def is_retryable(exc: BaseException, sdk: ModuleType) -> bool:
    if isinstance(exc, sdk.APITimeoutError):
        # A slow model would only be slow again; a connect timeout may be a blip.
        return is_connect_phase(exc)
    if isinstance(exc, sdk.APIConnectionError):
        return True
    status = status_of(exc)
    return status is not None and (status in RETRYABLE_STATUS or status >= 500)


def map_error(
    exc: BaseException,
    sdk: ModuleType,
    *,
    url: str,
    model: str,
    api_key_env: str,
    timeout_s: float,
    retries: int = 0,
    route: str = "chat",
) -> ModelError:
    """One clear ModelError for any SDK failure while opening a request."""
    if isinstance(exc, ModelError):
        return exc
    after = f" after {retries} {'retry' if retries == 1 else 'retries'}" if retries else ""
    if isinstance(exc, sdk.APITimeoutError):
        if is_connect_phase(exc):
            return ModelUnreachable(f"model endpoint {url} is unreachable (timed out connecting)", url=url)
        return ModelTimeout(f"model endpoint {url} did not answer within {timeout_s:g}s", url=url)
    if isinstance(exc, sdk.APIConnectionError):
        return ModelUnreachable(
            f"model endpoint {url} is unreachable ({connect_failure_reason(exc)}){after}", url=url
        )
    status = status_of(exc)
    if status is None:
        return ModelBadResponse(f"model endpoint {url} sent an unreadable reply: {server_message(exc)}", url=url)
    text = server_message(exc)
    if status in (401, 403):
        return ModelAuthError(
            f"model endpoint {url} rejected the API key ({status}); set {api_key_env} or model.api_key_env",
            url=url,
            status=status,
        )
    if status == 429:
        wait = retry_after_of(exc)
        hint = f"retry after {wait:g}s" if wait is not None else "try again later"
        return ModelRateLimited(
            f"model endpoint {url} is rate limiting requests (429){after}; {hint}", url=url, retry_after=wait
        )
    if status == 404:
        if route == "models":
            return ModelBadResponse(
                f"model endpoint {url} has no /models route (404); check model.base_url", url=url, status=404
            )
        if "model" in text.lower():
            return ModelBadResponse(
                f"model endpoint {url} does not know model '{model}' (404); check model.name", url=url, status=404
            )
        return ModelBadResponse(
            f"model endpoint {url} has no chat completions route (404); check model.base_url (often ends in /v1)",
            url=url,
            status=404,
        )
    if status >= 500:
        return ModelServerError(f"model endpoint {url} failed ({status}){after}: {text}", url=url, status=status)
    return ModelRequestRejected(f"model endpoint {url} rejected the request ({status}): {text}", url=url, status=status)


async def with_retries(
    open_call: Callable[[], Awaitable[T]],
    sdk: ModuleType,
    policy: RetryPolicy,
    *,
    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    **describe: Any,
) -> T:
    """Run `open_call`, retrying 429/5xx/connection failures; raise a ModelError at the end.

    Only the opening of a request is retried: once events reached the caller a
    retry would duplicate text, so mid-stream failures are the caller's to map.
    """
    attempt = 0
    while True:
        try:
            return await open_call()
        except ModelError:
            raise
        except Exception as exc:
            if not is_retryable(exc, sdk):
                raise map_error(exc, sdk, retries=attempt, **describe) from exc
            wait = policy.delay(attempt, retry_after_of(exc) if status_of(exc) == 429 else None)
            if wait is None:
                raise map_error(exc, sdk, retries=attempt, **describe) from exc
            attempt += 1
            await sleep(wait)
