"""The model client's HTTP (`ndomo.llm.http`) against real sockets: servers written byte by
byte in the test, with the quirks real ones have (a kept connection closed while idle, a
body cut off, a body that ends with the connection, CR line ends, gzip), redirects to
another origin, an http proxy and a CONNECT proxy in front of a TLS server whose
certificate `openssl` makes for the test."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import shutil
import ssl
import subprocess
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from ndomo.llm import http
from ndomo.llm.errors import connect_failure_reason

Handler = Callable[["Peer"], Awaitable[None]]


class Peer:
    """One accepted connection on a test server: read a request, write raw bytes."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    async def request(self) -> tuple[str, dict[str, str], bytes] | None:
        """(request line, headers, body), or None when the client closed."""
        try:
            head = await self.reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError):
            return None
        line, *rest = head.decode("latin-1").split("\r\n")
        headers = {}
        for h in rest:
            if h:
                name, _, value = h.partition(":")
                headers[name.strip().lower()] = value.strip()
        size = int(headers.get("content-length", "0"))
        body = await self.reader.readexactly(size) if size else b""
        return line, headers, body

    async def send(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()


def ok(body: bytes = b"ok", extra: str = "") -> bytes:
    return f"HTTP/1.1 200 OK\r\ncontent-length: {len(body)}\r\n{extra}\r\n".encode() + body


class Server:
    def __init__(self, handler: Handler, tls: ssl.SSLContext | None = None) -> None:
        self.handler = handler
        self.tls = tls
        self.connections = 0
        self.requests: list[tuple[str, dict[str, str], bytes]] = []
        self.peers: list[Peer] = []

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        peer = Peer(reader, writer)
        self.peers.append(peer)
        try:
            await self.handler(peer)
        except (ConnectionError, asyncio.IncompleteReadError, ssl.SSLError):
            pass
        finally:
            writer.close()

    async def __aenter__(self) -> Server:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self.tls)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self.server.close()
        for peer in self.peers:
            peer.writer.close()
        await self.server.wait_closed()

    def url(self, path: str = "/", host: str = "127.0.0.1") -> str:
        scheme = "https" if self.tls else "http"
        return f"{scheme}://{host}:{self.port}{path}"


def answering(*answers: bytes, per_connection: int = 1000) -> Handler:
    """Answer each request with the next of `answers` (the last repeats); a connection
    closes without an answer after `per_connection` requests."""

    async def handle(peer: Peer) -> None:
        served = 0
        while (req := await peer.request()) is not None:
            if served == per_connection:
                return  # closed with the request unanswered: an idle timeout's race
            handle.seen.append(req)  # type: ignore[attr-defined]
            await peer.send(answers[min(len(handle.seen), len(answers)) - 1])  # type: ignore[attr-defined]
            served += 1

    handle.seen = []  # type: ignore[attr-defined]
    return handle


@pytest.fixture
async def client() -> AsyncIterator[http.Client]:
    c = http.Client(timeout=5.0, env={})
    yield c
    await c.aclose()


async def read(c: http.Client, url: str, **kw: Any) -> http.Response:
    return await c.request("GET", url, **kw)


async def test_a_kept_connection_carries_the_next_request(client: http.Client) -> None:
    handler = answering(ok(b"one"), ok(b"two"))
    async with Server(handler) as srv:
        assert (await read(client, srv.url("/a"))).text == "one"
        assert (await read(client, srv.url("/b?x=1"))).text == "two"
        assert srv.connections == 1
        assert [r[0] for r in handler.seen] == ["GET /a HTTP/1.1", "GET /b?x=1 HTTP/1.1"]  # type: ignore[attr-defined]
        assert handler.seen[0][1]["host"] == f"127.0.0.1:{srv.port}"  # type: ignore[attr-defined]


async def test_a_kept_connection_the_server_dropped_is_replaced_at_once(
    client: http.Client,
) -> None:
    """The server reads the second request on the kept connection and closes it unanswered
    (its idle timeout firing as the request arrived): the request goes again on a new
    connection, without the transport's half-second retry wait, and is answered."""
    async with Server(answering(ok(b"fine"), per_connection=1)) as srv:
        for _ in range(3):
            assert (await read(client, srv.url())).text == "fine"
        assert srv.connections == 3


async def test_a_connection_closed_while_idle_is_not_reused(client: http.Client) -> None:
    async def handle(peer: Peer) -> None:
        await peer.request()
        await peer.send(ok())  # keep-alive by HTTP/1.1, then closed: an idle timeout

    async with Server(handle) as srv:
        await read(client, srv.url())
        await asyncio.sleep(0.05)  # the FIN reaches the client's socket
        await read(client, srv.url())
        assert srv.connections == 2


async def test_a_fresh_connection_closed_without_an_answer_is_an_error(client: http.Client) -> None:
    async def handle(peer: Peer) -> None:
        await peer.request()

    async with Server(handle) as srv:
        with pytest.raises(http.RemoteProtocolError, match="without an answer"):
            await read(client, srv.url())
        assert (
            srv.connections == 1
        )  # a new connection is not tried again here: the transport retries


async def test_lines_split_at_cr_lf_and_crlf_across_chunks_only(client: http.Client) -> None:
    parts = [
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n",
        b"data: a\r",  # a CR that turns out to be half of a CRLF
        b"\ndata: b\xe2\x80",  # a character split across chunks
        b"\xa8c\rdata: d\n\n",
        b"data: \xe2\x80\xa9e",  # no end of line before the end of the body
    ]

    async def handle(peer: Peer) -> None:
        await peer.request()
        await peer.send(parts[0])
        for part in parts[1:]:
            await peer.send(f"{len(part):x}\r\n".encode() + part + b"\r\n")
            await asyncio.sleep(0.01)
        await peer.send(b"0\r\n\r\n")

    async with Server(handle) as srv:
        response = await client.send("GET", srv.url())
        lines = [line async for line in response.aiter_lines()]
        await response.aclose()
    # U+2028 and U+2029 are text inside a JSON string, not line ends
    assert lines == ["data: a", "data: b\u2028c", "data: d", "", "data: \u2029e"]


async def test_a_body_that_ends_with_the_connection_is_read_whole(client: http.Client) -> None:
    async def handle(peer: Peer) -> None:
        await peer.request()
        await peer.send(b'HTTP/1.0 200 OK\r\ncontent-type: application/json\r\n\r\n{"a": ')
        await peer.send(b"1}")
        peer.writer.close()

    async with Server(handle) as srv:
        assert (await read(client, srv.url())).json() == {"a": 1}


async def test_a_body_cut_off_is_an_error_not_a_short_answer(client: http.Client) -> None:
    async def handle(peer: Peer) -> None:
        await peer.request()
        await peer.send(b'HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\ndata: {"partial"')
        peer.writer.close()

    async with Server(handle) as srv:
        response = await client.send("GET", srv.url())
        with pytest.raises(http.TransportError):
            await response.aread()
        await response.aclose()


async def test_gzip_is_decoded_and_an_unknown_encoding_refused(client: http.Client) -> None:
    packed = gzip.compress(b'{"zipped": true}')
    handler = answering(
        ok(packed, "content-encoding: gzip\r\n"), ok(b"??", "content-encoding: br\r\n")
    )
    async with Server(handler) as srv:
        assert (await read(client, srv.url())).json() == {"zipped": True}
        with pytest.raises(http.RemoteProtocolError, match="'br'"):
            await read(client, srv.url())
    assert "accept-encoding" not in handler.seen[0][1]  # type: ignore[attr-defined]


async def test_a_silent_server_times_out_on_read(client: http.Client) -> None:
    async def handle(peer: Peer) -> None:
        await peer.request()
        await asyncio.sleep(10)

    async with Server(handle) as srv:
        with pytest.raises(http.ReadTimeout):
            await read(client, srv.url(), timeout=0.2)


async def test_a_closed_port_is_a_connect_error_that_says_refused(
    client: http.Client, closed_port_url: str
) -> None:
    with pytest.raises(http.ConnectError) as info:
        await read(client, closed_port_url)
    assert connect_failure_reason(info.value) == "connection refused"


async def test_a_stream_closed_early_closes_its_connection(client: http.Client) -> None:
    async def handle(peer: Peer) -> None:
        await peer.request()
        await peer.send(b"HTTP/1.1 200 OK\r\ncontent-length: 1000000\r\n\r\n" + b"x" * 1000)
        handle.eof = await peer.reader.read(1)  # type: ignore[attr-defined]

    async with Server(handle) as srv:
        response = await client.send("GET", srv.url())
        async for _ in response.aiter_bytes():
            break
        await response.aclose()
        for _ in range(100):
            if hasattr(handle, "eof"):
                break
            await asyncio.sleep(0.01)
        assert handle.eof == b""  # type: ignore[attr-defined]  # the server saw the socket close
    assert not any(client._idle.values())


async def test_redirects_keep_the_key_on_its_origin_only(client: http.Client) -> None:
    async with Server(answering(ok(b"elsewhere"))) as other:
        hops = [
            b"HTTP/1.1 307 Temporary Redirect\r\nlocation: /v1/next\r\ncontent-length: 0\r\n\r\n",
            f"HTTP/1.1 303 See Other\r\nlocation: {other.url('/x')}\r\ncontent-length: 0\r\n\r\n".encode(),
        ]
        handler = answering(*hops)
        async with Server(handler) as srv:
            response = await client.send(
                "POST",
                srv.url("/v1/chat"),
                content=b"{}",
                headers={"authorization": "Bearer SECRET", "content-type": "application/json"},
            )
            assert (await response.aread()) == b"elsewhere"
        seen = handler.seen  # type: ignore[attr-defined]
        assert [r[0] for r in seen] == ["POST /v1/chat HTTP/1.1", "POST /v1/next HTTP/1.1"]
        assert seen[1][1]["authorization"] == "Bearer SECRET" and seen[1][2] == b"{}"
        last = other.handler.seen[0]  # type: ignore[attr-defined]
        assert last[0] == "GET /x HTTP/1.1" and last[2] == b""  # 303: a GET without the body
        assert "authorization" not in last[1]  # another port is another origin


async def test_redirects_stop_after_twenty(client: http.Client) -> None:
    loop = b"HTTP/1.1 302 Found\r\nlocation: /again\r\ncontent-length: 0\r\n\r\n"
    async with Server(answering(loop)) as srv:
        with pytest.raises(http.TooManyRedirects):
            await read(client, srv.url())


# ---- TLS and proxies --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for localhost, made by openssl."""
    if shutil.which("openssl") is None:
        pytest.fail("openssl is needed (Debian: openssl)")
    d = tmp_path_factory.mktemp("tls")
    cert, key = d / "cert.pem", d / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
         "-keyout", str(key), "-out", str(cert), "-subj", "/CN=localhost",
         "-addext", "subjectAltName=DNS:localhost"],
        check=True, capture_output=True,
    )  # fmt: skip
    return cert, key


def server_tls(certs: tuple[Path, Path]) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(*certs)
    return ctx


class Proxy:
    """An http proxy: forwards absolute-form requests, tunnels CONNECT; records what it saw."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, dict[str, str]]] = []

    async def handle(self, peer: Peer) -> None:
        req = await peer.request()
        if req is None:
            return
        line, headers, body = req
        self.seen.append((line, headers))
        method, target, _ = line.split(" ")
        if method == "CONNECT":
            host, port = target.rsplit(":", 1)
            up_r, up_w = await asyncio.open_connection(host, int(port))
            await peer.send(b"HTTP/1.1 200 Connection established\r\n\r\n")

            async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
                with contextlib.suppress(ConnectionError):
                    while data := await src.read(65536):
                        dst.write(data)
                        await dst.drain()
                dst.close()

            await asyncio.gather(pipe(peer.reader, up_w), pipe(up_r, peer.writer))
            return
        await peer.send(ok(f"proxied {target}".encode()))


async def test_https_through_a_connect_proxy_checks_the_servers_certificate(
    certs: tuple[Path, Path],
) -> None:
    proxy = Proxy()
    async with (
        Server(answering(ok(b"secret answer")), tls=server_tls(certs)) as srv,
        Server(proxy.handle) as px,
    ):
        env = {
            "HTTPS_PROXY": f"http://me:p%40ss@127.0.0.1:{px.port}",
            "SSL_CERT_FILE": str(certs[0]),
        }
        c = http.Client(timeout=5.0, env=env)
        try:
            assert (await read(c, srv.url("/v1/models", host="localhost"))).text == "secret answer"
        finally:
            await c.aclose()
        line, headers = proxy.seen[0]
        assert line == f"CONNECT localhost:{srv.port} HTTP/1.1"
        assert headers["proxy-authorization"] == "Basic bWU6cEBzcw=="  # me:p@ss
        # without the test's CA the same server is refused, and says why
        c = http.Client(timeout=5.0, env={})  # certifi's CAs
        try:
            with pytest.raises(http.ConnectError) as info:
                await read(c, srv.url(host="localhost"))
        finally:
            await c.aclose()
        assert connect_failure_reason(info.value) == "TLS handshake failed"


async def test_http_through_a_proxy_and_no_proxy_bypasses_it(client: http.Client) -> None:
    proxy = Proxy()
    async with Server(answering(ok(b"direct"))) as srv, Server(proxy.handle) as px:
        env = {"http_proxy": f"127.0.0.1:{px.port}", "NO_PROXY": "example.com"}
        c = http.Client(timeout=5.0, env=env)
        try:
            got = await read(c, srv.url("/v1/models"))
            assert got.text == f"proxied {srv.url('/v1/models')}"
            assert proxy.seen[0][1]["host"] == f"127.0.0.1:{srv.port}"
        finally:
            await c.aclose()
        for no_proxy in ("127.0.0.1", "*", f"127.0.0.1:{srv.port}", "http://127.0.0.1"):
            c = http.Client(timeout=5.0, env={**env, "NO_PROXY": no_proxy})
            try:
                assert (await read(c, srv.url())).text == "direct", no_proxy
            finally:
                await c.aclose()
        assert len(proxy.seen) == 1


async def test_a_socks_proxy_is_refused_with_what_to_do() -> None:
    c = http.Client(timeout=5.0, env={"ALL_PROXY": "socks5://127.0.0.1:1080"})
    try:
        with pytest.raises(http.UnsupportedProtocol, match="NO_PROXY"):
            await read(c, "http://model.internal:8080/v1/models")
    finally:
        await c.aclose()


async def test_plain_http_loads_no_certificate_authorities(client: http.Client) -> None:
    async with Server(answering(ok())) as srv:
        await read(client, srv.url())
    assert client._tls is None  # the 40-100 ms of CAs only with the first https connection


async def test_the_certificate_authorities_load_off_the_event_loop(
    certs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    real, threads = http._tls_context, []

    def recorded(env: Any) -> ssl.SSLContext:
        threads.append(threading.current_thread())
        return real(env)

    monkeypatch.setattr(http, "_tls_context", recorded)
    async with Server(answering(ok(b"over tls")), tls=server_tls(certs)) as srv:
        c = http.Client(timeout=5.0, env={"SSL_CERT_FILE": str(certs[0])})
        try:
            assert (await read(c, srv.url(host="localhost"))).text == "over tls"
            assert (await read(c, srv.url(host="localhost"))).text == "over tls"
        finally:
            await c.aclose()
    # one load, for the first https connection, and not on the loop's thread (40-100 ms)
    assert len(threads) == 1 and threads[0] is not threading.main_thread()
