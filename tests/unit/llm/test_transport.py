"""The model transport without the OpenAI SDK: its retry policy (the SDK's) against the
scripted server over real HTTP, and its event-stream reading on the shapes servers send."""

from __future__ import annotations

import email.utils
import ssl
import time
from typing import Any

import httpx
import pytest

from ndomo.llm import ModelRequestRejected, ModelServerError, TextChunk
from ndomo.llm.transport import _tls_for, events, retry_after, retry_wait

from .conftest import collect


def text_of(events: list[Any]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextChunk))


async def test_x_should_retry_decides_when_the_server_says(fake: Any, clients: Any) -> None:
    fake.push({"status": 500, "headers": {"x-should-retry": "false"}})
    with pytest.raises(ModelServerError, match=r"failed \(500\): internal server error"):
        await collect(clients(fake.url, max_retries=2))
    assert len(fake.chat_requests()) == 1  # a 500 the server says not to retry
    fake.push({"status": 400, "headers": {"x-should-retry": "true", "retry-after-ms": "1"}})
    assert text_of(await collect(clients(fake.url, max_retries=2))) == "done"
    assert len(fake.chat_requests()) == 3  # a 400 it says to retry, then the answer


async def test_a_plain_400_is_not_retried(fake: Any, clients: Any) -> None:
    fake.push({"status": 400})
    with pytest.raises(ModelRequestRejected):
        await collect(clients(fake.url, max_retries=2))
    assert len(fake.chat_requests()) == 1


def test_retry_after_reads_milliseconds_seconds_and_dates() -> None:
    assert retry_after(httpx.Headers({"retry-after-ms": "250", "retry-after": "9"})) == 0.25
    assert retry_after(httpx.Headers({"retry-after": "1.5"})) == 1.5
    soon = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 < (retry_after(httpx.Headers({"retry-after": soon})) or 0) <= 31
    assert retry_after(httpx.Headers({"retry-after": "soon"})) is None
    assert retry_after(httpx.Headers({})) is None


def test_the_backoff_doubles_from_half_a_second_to_eight_with_jitter() -> None:
    for attempt, top in ((0, 0.5), (1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (9, 8.0)):
        waits = [retry_wait(attempt, None) for _ in range(50)]
        assert all(0.75 * top <= w <= top for w in waits), (attempt, waits)
    assert retry_wait(0, httpx.Headers({"retry-after": "3"})) == 3.0
    assert retry_wait(0, httpx.Headers({"retry-after": "600"})) <= 0.5  # not honoured past 60 s


async def _events_of(body: bytes) -> list[tuple[str | None, str]]:
    response = httpx.Response(200, stream=httpx.ByteStream(body))
    return [(e.event, e.data) async for e in events(response)]


async def test_event_stream_shapes_servers_send() -> None:
    body = (
        b": OPENROUTER PROCESSING\r\n\r\n"  # a comment keeping the connection alive
        b'data: {"a": 1}\r\n\r\n'
        b"data: first line\ndata: second line\n\n"  # data lines join with a newline
        b'event: error\ndata: {"error": {"message": "boom"}}\n\n'
        b"id: 7\nretry: 10\ndata:no-space\n\n"
        b"data: [DONE]"  # no blank line before the end of the body
    )
    assert await _events_of(body) == [
        (None, '{"a": 1}'),
        (None, "first line\nsecond line"),
        ("error", '{"error": {"message": "boom"}}'),
        (None, "no-space"),
        (None, "[DONE]"),
    ]


def test_plain_http_loads_no_certificate_authorities_but_still_requires_one() -> None:
    assert _tls_for("https://api.openai.com/v1") is True  # httpx's default: the system CAs
    ctx = _tls_for("http://127.0.0.1:8080/v1")
    assert isinstance(ctx, ssl.SSLContext)
    assert ctx.verify_mode == ssl.CERT_REQUIRED and ctx.check_hostname
    assert ctx.cert_store_stats()["x509_ca"] == 0  # a redirect to https fails, never unchecked
