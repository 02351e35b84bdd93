"""The model transport without the OpenAI SDK: its retry policy (the SDK's) against the
scripted server over real HTTP, and its event-stream reading on the shapes servers send."""

from __future__ import annotations

import email.utils
import time
from typing import Any

import pytest

from ndomo.llm import ModelRequestRejected, ModelServerError, ModelUnreachable, TextChunk
from ndomo.llm.http import Headers, Response
from ndomo.llm.transport import events, retry_after, retry_wait

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
    assert retry_after(Headers({"retry-after-ms": "250", "retry-after": "9"})) == 0.25
    assert retry_after(Headers({"retry-after": "1.5"})) == 1.5
    soon = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 < (retry_after(Headers({"retry-after": soon})) or 0) <= 31
    assert retry_after(Headers({"retry-after": "soon"})) is None
    assert retry_after(Headers({})) is None


def test_the_backoff_doubles_from_half_a_second_to_eight_with_jitter() -> None:
    for attempt, top in ((0, 0.5), (1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (9, 8.0)):
        waits = [retry_wait(attempt, None) for _ in range(50)]
        assert all(0.75 * top <= w <= top for w in waits), (attempt, waits)
    assert retry_wait(0, Headers({"retry-after": "3"})) == 3.0
    assert retry_wait(0, Headers({"retry-after": "600"})) <= 0.5  # not honoured past 60 s


async def _events_of(body: bytes) -> list[tuple[str | None, str]]:
    response = Response(200, Headers(), "http://127.0.0.1/", content=body)
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


async def test_the_request_says_who_sends_it(fake: Any, clients: Any) -> None:
    await collect(clients(fake.url))
    headers = fake.chat_requests()[-1]["headers"]
    assert headers["user-agent"].startswith("ndomo/")  # some hosts' firewalls refuse none
    assert headers["authorization"].startswith("Bearer ")


async def test_a_socks_proxy_is_reported_at_once_not_retried(
    fake: Any, clients: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ALL_PROXY", "socks5://127.0.0.1:1080")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    with pytest.raises(ModelUnreachable) as info:
        await collect(clients(fake.url, max_retries=2))
    said = str(info.value)
    assert "socks5 proxy" in said and "NO_PROXY" in said and "retr" not in said, said
    assert fake.chat_requests() == []


async def test_a_raw_line_separator_inside_the_json_is_not_a_line_end() -> None:
    # llama.cpp writes JSON as raw UTF-8: U+2028 / U+2029 in a model's text arrive unescaped.
    # httpx split lines there too (str.splitlines), and the turn failed on a broken chunk.
    chunk = '{"choices":[{"delta":{"content":"a\u2028b\u2029c\x85d"}}]}'
    body = f"data: {chunk}\n\ndata: [DONE]\n\n".encode()
    assert await _events_of(body) == [(None, chunk), (None, "[DONE]")]
