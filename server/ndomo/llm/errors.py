"""Model failures as one-line, user-facing messages, and the mapping from SDK exceptions.

The editor shows `str(error)` as is, so every message names the endpoint, carries the
server's own words (status and body) and ends with one hint on what to do; callers
branch on the subclass, never on the text. Both SDKs share their exception names
(APIConnectionError, APITimeoutError, APIStatusError …), so one mapper serves both.
Retrying is the SDKs' own job (`max_retries`, honouring Retry-After); this module only
translates what is left after their retries.
"""

from __future__ import annotations

import re
import socket
from typing import Any


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

    # What to do next, said the same way by `ndomo run`, the editors and `ndomo health`.
    HINT = "start the model server (e.g. Ollama) or set NDOMO_BASE_URL; see `ndomo health`"


class ModelAuthError(ModelError):
    """401/403: the key is missing or wrong."""


class ModelRateLimited(ModelError):
    """429 that outlived the SDK's retries."""

    def __init__(
        self, message: str, *, url: str | None = None, retry_after: float | None = None
    ) -> None:
        super().__init__(message, url=url, status=429)
        self.retry_after = retry_after


class ModelTimeout(ModelError):
    """Connected, but the server did not answer (or stopped streaming) within the timeout."""


class ModelBadResponse(ModelError):
    """Garbage body, stream cut mid-way, unknown model or missing route (404)."""


class ModelEmptyStream(ModelBadResponse):
    """A streamed reply that ended without a single chunk (llama-cpp-python refusing to
    stream tool calls does this); with `model.stream: auto` the request is sent again
    without streaming."""


class ModelServerError(ModelError):
    """5xx that outlived the SDK's retries."""


class ModelRequestRejected(ModelError):
    """Other 4xx: the server refused this request (bad parameter …)."""


class ModelContextExceeded(ModelRequestRejected):
    """The request is larger than the model's context window; `window` when the server said."""

    def __init__(
        self,
        message: str,
        *,
        url: str | None = None,
        status: int | None = None,
        window: int | None = None,
        prompt_tokens: int | None = None,
    ) -> None:
        super().__init__(message, url=url, status=status)
        self.window = window
        self.prompt_tokens = prompt_tokens


class ModelToolsUnsupported(ModelRequestRejected):
    """The server or model cannot take tools (Ollama: "… does not support tools"; llama.cpp
    started without --jinja: "tools param requires --jinja flag"); `said` is the server's
    own words."""

    def __init__(
        self, message: str, *, url: str | None = None, status: int | None = None, said: str = ""
    ) -> None:
        super().__init__(message, url=url, status=status)
        self.said = said


class ModelContextTooSmall(ModelError):
    """Raised before sending: even the smallest request does not fit the context window."""


# ---- reading an SDK exception ------------------------------------------------------------

_CONTEXT_WORDS = (
    "exceeds context",
    "exceed_context",
    "exceeds the available context",
    "context_length_exceeded",
    "maximum context length",
    "context window",
    "too many tokens",
    "prompt is too long",
)
_TOOLS_WORDS = (
    "does not support tools",
    "does not support tool",
    "tools are not supported",
    "tool use is not supported",
    "tool calling is not supported",
    "function calling is not supported",
    "requires --jinja",  # llama.cpp without --jinja: "tools param requires --jinja flag"
)


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
        s in text
        for s in (
            "name or service not known",
            "nodename nor servname",
            "getaddrinfo",
            "name resolution",
        )
    ):
        return "host not found"
    if "ssl" in text or "certificate" in text:
        return "TLS handshake failed"
    root = chain[-1]
    detail = str(root).strip() or type(root).__name__
    return f"connection failed: {detail}"[:200]


def _is_connect_phase(exc: BaseException) -> bool:
    names = {type(e).__name__ for e in _chain(exc)}
    return bool(names & {"ConnectError", "ConnectTimeout", "ConnectionRefusedError", "gaierror"})


def _error_dict(body: Any) -> dict[str, Any]:
    if isinstance(body, dict):
        inner = body.get("error")
        return inner if isinstance(inner, dict) else body
    return {}


def server_message(exc: Any) -> str:
    """The server's own words: the body's error message, else the SDK's text."""
    body = getattr(exc, "body", None)
    err = _error_dict(body)
    msg: Any = err.get("message")
    if msg is None and isinstance(body, dict) and isinstance(body.get("error"), str):
        msg = body["error"]
    elif msg is None and isinstance(body, str):
        msg = body
    if not msg:
        msg = getattr(exc, "message", None) or str(exc)
    return " ".join(str(msg).split())[:300]


def _status(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None


def _retry_after(exc: BaseException) -> float | None:
    headers = getattr(getattr(exc, "response", None), "headers", None)
    if headers is None:
        return None
    try:
        if headers.get("retry-after-ms") is not None:
            return float(headers["retry-after-ms"]) / 1000
        value = headers.get("retry-after")
        return float(value) if value is not None else None
    except (TypeError, ValueError):  # an HTTP date or junk: not worth hiding the real error over
        return None


def context_numbers(exc: Any, text: str) -> tuple[int | None, int | None]:
    """(window, prompt tokens) from a context error: llama.cpp puts n_ctx and n_prompt_tokens in
    the body, OpenAI says "maximum context length is N tokens … resulted in M tokens"."""
    err = _error_dict(getattr(exc, "body", None))
    window = err.get("n_ctx") if isinstance(err.get("n_ctx"), int) else None
    prompt = err.get("n_prompt_tokens") if isinstance(err.get("n_prompt_tokens"), int) else None
    if window is None and (m := re.search(r"context length is (\d+)", text)):
        window = int(m.group(1))
    if prompt is None and (m := re.search(r"resulted in (\d+) tokens", text)):
        prompt = int(m.group(1))
    return window, prompt


def is_context_error(exc: Any, text: str) -> bool:
    code = (
        str(_error_dict(getattr(exc, "body", None)).get("code") or "")
        + " "
        + str(_error_dict(getattr(exc, "body", None)).get("type") or "")
    )
    low = (text + " " + code).lower()
    return any(w in low for w in _CONTEXT_WORDS)


def is_tools_error(text: str) -> bool:
    low = text.lower()
    return any(w in low for w in _TOOLS_WORDS)


def map_error(
    exc: BaseException,
    sdk: Any,
    *,
    url: str,
    model: str,
    api_key_env: str,
    timeout_s: float,
    retries: int = 0,
    route: str = "chat",
) -> ModelError:
    """One clear ModelError for any failure while opening a request (after the retries).

    `sdk` names the timeout and connection exception classes: the Anthropic SDK module, or
    `transport.ERRORS` for the OpenAI-compatible client's own HTTP (`llm/http.py`)."""
    if isinstance(exc, ModelError):
        return exc
    after = f" after {retries} {'retry' if retries == 1 else 'retries'}" if retries else ""
    if isinstance(exc, sdk.APITimeoutError):
        if _is_connect_phase(exc):
            return ModelUnreachable(
                f"model endpoint {url} is unreachable (timed out connecting){after}; "
                f"{ModelUnreachable.HINT}",
                url=url,
            )
        return ModelTimeout(
            f"model endpoint {url} did not answer within {timeout_s:g}s{after}; "
            "raise model.timeout_s or use a faster model",
            url=url,
        )
    if isinstance(exc, sdk.APIConnectionError):
        return ModelUnreachable(
            f"model endpoint {url} is unreachable ({connect_failure_reason(exc)}){after}; "
            f"{ModelUnreachable.HINT}",
            url=url,
        )
    status = _status(exc)
    text = server_message(exc)
    if status is None:
        return ModelBadResponse(f"model endpoint {url} sent an unreadable reply: {text}", url=url)
    if status in (401, 403):
        return ModelAuthError(
            f"model endpoint {url} rejected the API key ({status}: {text}); set {api_key_env} or model.api_key_env",
            url=url,
            status=status,
        )
    if status == 429:
        wait = _retry_after(exc)
        hint = f"retry after {wait:g}s" if wait is not None else "try again later"
        return ModelRateLimited(
            f"model endpoint {url} is rate limiting requests (429: {text}){after}; {hint}",
            url=url,
            retry_after=wait,
        )
    if status == 404:
        if route == "models":
            return ModelBadResponse(
                f"model endpoint {url} has no /models route (404: {text}); check model.base_url",
                url=url,
                status=404,
            )
        if "model" in text.lower():
            return ModelBadResponse(
                f"model endpoint {url} does not know model '{model}' (404: {text}); "
                "check model.name",
                url=url,
                status=404,
            )
        return ModelBadResponse(
            f"model endpoint {url} has no chat completions route (404: {text}); "
            "check model.base_url (often ends in /v1)",
            url=url,
            status=404,
        )
    if is_context_error(exc, text):
        window, prompt = context_numbers(exc, text)
        return ModelContextExceeded(
            f"model endpoint {url} refused a request larger than its context window ({status}: {text}); "
            "set model.context_window or raise the server's context size",
            url=url,
            status=status,
            window=window,
            prompt_tokens=prompt,
        )
    if is_tools_error(text):
        fix = (
            "start llama-server with --jinja"
            if "--jinja" in text
            else "use a model with tool support (e.g. qwen2.5-coder)"
        )
        return ModelToolsUnsupported(
            f"model '{model}' at {url} does not support tool calling ({status}: {text}); "
            f"{fix} for autopilot",
            url=url,
            status=status,
            said=text[:200],
        )
    if status >= 500:
        return ModelServerError(
            f"model endpoint {url} failed ({status}){after}: {text}; see the model server's log",
            url=url,
            status=status,
        )
    return ModelRequestRejected(
        f"model endpoint {url} rejected the request ({status}): {text}; see the model server's log",
        url=url,
        status=status,
    )
