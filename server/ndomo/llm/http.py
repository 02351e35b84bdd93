"""HTTP/1.1 to a model server: asyncio's streams with h11, the protocol engine httpx is
built on, without httpx's client, httpcore's pool and anyio.

Those layers cost every `ndomo run` ~100 ms of imports (httpx, then anyio at the first
connection) and every streamed request ~0.6 ms of the event loop before its first chunk
(docs/performance.md, Stop 41). A model client needs less than they offer, and all of it is
here:

- keep-alive connections per origin; a request that finds its reused connection closed by
  the server (an idle timeout) before any answer goes again on a new one, at once;
- TLS checked against certifi's CAs, or `SSL_CERT_FILE` / `SSL_CERT_DIR` (httpx's default);
- proxies from the environment (`HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY`, `NO_PROXY`), as
  httpx reads them: http(s) proxies, https through `CONNECT`; a socks proxy is an error
  that says so (httpx needs an extra package for one too);
- redirects followed (20 at most, as httpx), the `authorization` header kept only on the
  same origin or its https upgrade, so a redirect cannot carry the key to another host;
- a connect timeout and a timeout on each read and write;
- a response streamed (`aiter_bytes`, `aiter_lines`) or read whole (`aread`), gzip and
  deflate decoded (none is asked for).

Errors carry httpx's class names (`ConnectError`, `ReadTimeout`, …) in its hierarchy:
`errors.map_error` and `errors.connect_failure_reason` read them by name.
"""

from __future__ import annotations

import asyncio
import base64
import codecs
import contextlib
import json
import logging
import os
import ssl
import zlib
from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Any
from urllib.parse import unquote, urljoin, urlsplit

import h11

log = logging.getLogger(__name__)

MAX_REDIRECTS = 20
READ_SIZE = 65536  # httpcore's
MAX_HEAD = 100 * 1024  # a response head this large is refused (httpcore's bound; h11's is 16 KB)
DEFAULT_PORTS = {"http": 80, "https": 443}


class HTTPError(Exception):
    """Any failure of a request that is not an answer."""


class TransportError(HTTPError):
    """The server could not be reached, or the exchange broke off."""


class TimeoutException(TransportError):
    pass


class ConnectTimeout(TimeoutException):
    pass


class ReadTimeout(TimeoutException):
    pass


class WriteTimeout(TimeoutException):
    pass


class NetworkError(TransportError):
    pass


class ConnectError(NetworkError):
    pass


class ReadError(NetworkError):
    pass


class WriteError(NetworkError):
    pass


class RemoteProtocolError(TransportError):
    """The server broke HTTP/1.1: closed before an answer, a malformed head, …"""


class ProxyError(TransportError):
    pass


class UnsupportedProtocol(TransportError):
    """A URL or proxy this client cannot use: not worth a retry."""


class LocalProtocolError(HTTPError):
    """A request HTTP cannot carry (a header value with a line break, …)."""


class TooManyRedirects(HTTPError):
    pass


class Headers(dict[str, str]):
    """A response's headers: lower-case names; a repeated header's values joined by ", "."""

    @classmethod
    def of(cls, raw: Iterable[tuple[bytes, bytes]]) -> Headers:
        headers = cls()
        for name, value in raw:
            key = name.decode("latin-1").lower()
            text = value.decode("latin-1")
            headers[key] = f"{headers[key]}, {text}" if key in headers else text
        return headers

    def get(self, key: str, default: Any = None) -> Any:
        return super().get(key.lower(), default)

    def __getitem__(self, key: str) -> str:
        return super().__getitem__(key.lower())

    def __contains__(self, key: object) -> bool:
        return super().__contains__(key.lower() if isinstance(key, str) else key)


# ---- where a request goes -----------------------------------------------------------------


class _Target:
    __slots__ = ("url", "scheme", "host", "port", "target", "origin", "host_header")

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme not in DEFAULT_PORTS:
            raise UnsupportedProtocol(f"cannot send to {url!r}: only http and https URLs")
        if not parts.hostname:
            raise UnsupportedProtocol(f"cannot send to {url!r}: no host")
        try:
            port = parts.port or DEFAULT_PORTS[scheme]
        except ValueError as exc:  # a port that is not a number
            raise UnsupportedProtocol(f"cannot send to {url!r}: {exc}") from None
        self.url = url
        self.scheme = scheme
        self.host = parts.hostname
        self.port = port
        self.target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self.origin = (scheme, self.host, port)
        name = f"[{self.host}]" if ":" in self.host else self.host
        self.host_header = name if port == DEFAULT_PORTS[scheme] else f"{name}:{port}"


def _proxy_env(env: Mapping[str, str]) -> dict[str, str]:
    """The proxy variables that are set, by lower-case name (`http_proxy` beats `HTTP_PROXY`,
    as urllib and httpx read them)."""
    found: dict[str, str] = {}
    for name in ("all_proxy", "http_proxy", "https_proxy", "no_proxy"):
        value = env.get(name) or env.get(name.upper())
        if value:
            found[name] = value.strip()
    return found


def _bypassed(target: _Target, no_proxy: str) -> bool:
    """NO_PROXY as httpx reads it: `*`; a host, which its subdomains share; `.domain`, for
    the subdomains only; an optional port; `scheme://host` for that scheme alone."""
    host = target.host.lower()
    for raw in no_proxy.lower().split(","):
        entry = raw.strip()
        if entry == "*":
            return True
        if "://" in entry:
            scheme, entry = entry.split("://", 1)
            if scheme not in (target.scheme, "all"):
                continue
        if not entry:
            continue
        port = None
        if entry.startswith("["):  # [::1]:8080
            entry, _, rest = entry[1:].partition("]")
            port = rest[1:] or None
        elif entry.count(":") == 1:
            entry, port = entry.split(":")
        if port is not None and port != str(target.port):
            continue
        if entry.startswith("."):
            if host.endswith(entry):
                return True
        elif host == entry or host.endswith("." + entry):
            return True
    return False


def _proxy_for(target: _Target, proxies: Mapping[str, str]) -> _Target | None:
    if not proxies:
        return None
    if "no_proxy" in proxies and _bypassed(target, proxies["no_proxy"]):
        return None
    url = proxies.get(f"{target.scheme}_proxy") or proxies.get("all_proxy")
    if not url:
        return None
    if "://" not in url:
        url = "http://" + url
    scheme = url.split("://", 1)[0].lower()
    if scheme not in DEFAULT_PORTS:
        raise UnsupportedProtocol(
            f"the {scheme} proxy {url.split('@')[-1]!r} is not supported for the model endpoint; "
            f"use an http proxy, or add {target.host} to NO_PROXY"
        )
    return _Target(url)


def _proxy_auth(proxy_url: str) -> list[tuple[str, str]]:
    parts = urlsplit(proxy_url)
    if parts.username is None:
        return []
    pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
    return [("proxy-authorization", "Basic " + base64.b64encode(pair.encode()).decode())]


def _tls_context(env: Mapping[str, str]) -> ssl.SSLContext:
    """httpx's default: `SSL_CERT_FILE`, else `SSL_CERT_DIR`, else certifi's CAs."""
    if env.get("SSL_CERT_FILE"):
        ctx = ssl.create_default_context(cafile=env["SSL_CERT_FILE"])
    elif env.get("SSL_CERT_DIR"):
        ctx = ssl.create_default_context(capath=env["SSL_CERT_DIR"])
    else:
        import certifi  # with the first https connection: loading the CAs costs 40-100 ms

        ctx = ssl.create_default_context(cafile=certifi.where())
    ctx.set_alpn_protocols(["http/1.1"])
    return ctx


# ---- one connection -------------------------------------------------------------------------


class _Conn:
    """One TCP (or TLS) connection and its h11 state machine."""

    def __init__(
        self, key: tuple[Any, ...], reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self.key = key
        self.reader = reader
        self.writer = writer
        self.h11 = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_HEAD)

    def idle_alive(self) -> bool:
        return not (self.writer.is_closing() or self.reader.at_eof())

    def abort(self) -> None:
        self.writer.transport.abort()

    async def close(self) -> None:
        self.writer.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.writer.wait_closed(), 1.0)

    async def next_event(self, timeout: float) -> Any:
        while True:
            try:
                event = self.h11.next_event()
            except h11.RemoteProtocolError as exc:
                raise RemoteProtocolError(str(exc)) from exc
            if event is not h11.NEED_DATA:
                return event
            try:
                async with asyncio.timeout(timeout):
                    data = await self.reader.read(READ_SIZE)
            except TimeoutError:
                raise ReadTimeout(f"no data from the server for {timeout:g}s") from None
            except OSError as exc:
                raise ReadError(str(exc) or type(exc).__name__) from exc
            if not data and self.h11.their_state is h11.SEND_RESPONSE:
                raise RemoteProtocolError("the server closed the connection without an answer")
            try:
                self.h11.receive_data(data)
            except h11.RemoteProtocolError as exc:
                raise RemoteProtocolError(str(exc)) from exc

    async def write(self, data: bytes, timeout: float) -> None:
        try:
            self.writer.write(data)
            if self.writer.transport.get_write_buffer_size() > 65536:  # a large body: let it drain
                async with asyncio.timeout(timeout):
                    await self.writer.drain()
        except TimeoutError:
            raise WriteTimeout(f"could not send to the server for {timeout:g}s") from None
        except OSError as exc:
            raise WriteError(str(exc) or type(exc).__name__) from exc


# ---- a response -------------------------------------------------------------------------------


class Response:
    """A response's status and headers; its body streamed or read once."""

    def __init__(
        self,
        status_code: int,
        headers: Headers,
        url: str,
        reason: str = "",
        *,
        conn: _Conn | None = None,
        client: Client | None = None,
        read_timeout: float = 60.0,
        content: bytes | None = None,
    ) -> None:
        self.status_code = status_code
        self.headers = headers
        self.url = url
        self.reason_phrase = reason
        self._conn = conn
        self._client = client
        self._timeout = read_timeout
        self._content = content
        self._consumed = content is not None
        encoding = headers.get("content-encoding", "identity").lower().strip()
        if encoding in ("gzip", "x-gzip"):
            self._decoder: Any = zlib.decompressobj(zlib.MAX_WBITS | 16)
        elif encoding == "deflate":
            self._decoder = zlib.decompressobj()
        elif encoding in ("identity", ""):
            self._decoder = None
        else:
            if conn is not None:
                conn.abort()
                self._conn = None
            raise RemoteProtocolError(
                f"the server sent a body in {encoding!r}, which was not asked for"
            )

    def __repr__(self) -> str:
        return f"<Response [{self.status_code} {self.reason_phrase}]>"

    @property
    def is_success(self) -> bool:
        return 200 <= self.status_code < 300

    async def aiter_raw(self) -> AsyncIterator[bytes]:
        """The body's bytes as they arrive (still encoded); the connection goes back to the
        pool when the body ends, and is closed by `aclose` before then."""
        if self._consumed:
            if self._content:
                yield self._content
            return
        self._consumed = True
        conn = self._conn
        if conn is None:
            return
        while True:
            event = await conn.next_event(self._timeout)
            if isinstance(event, h11.Data):
                yield bytes(event.data)
            elif isinstance(event, h11.EndOfMessage):
                self._conn = None
                if self._client is not None:
                    self._client._release(conn)
                return
            elif isinstance(event, h11.ConnectionClosed):
                self._conn = None
                conn.abort()
                return

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        """The body's bytes as they arrive, decoded."""
        decoder = self._decoder
        async for chunk in self.aiter_raw():
            data = decoder.decompress(chunk) if decoder is not None else chunk
            if data:
                yield data
        if decoder is not None:
            tail = decoder.flush()
            if tail:
                yield tail

    async def aiter_lines(self) -> AsyncIterator[str]:
        """The body's lines, split at CRLF, LF or CR only (as server-sent events are): a
        U+2028 inside a JSON string is text, not a line end."""
        decode = codecs.getincrementaldecoder("utf-8")(errors="replace").decode
        pending = ""
        async for chunk in self.aiter_bytes():
            text = pending + decode(chunk)
            if text.endswith("\r"):  # a CR that may be half of a CRLF
                text, pending = text[:-1], "\r"
            else:
                pending = ""
            lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
            pending = lines.pop() + pending
            for line in lines:
                yield line
        pending += decode(b"", True)
        if pending.endswith("\r"):
            pending = pending[:-1]
        if pending:
            yield pending

    async def aread(self) -> bytes:
        if self._content is None:
            parts = [chunk async for chunk in self.aiter_bytes()]
            self._content = b"".join(parts)
        return self._content

    @property
    def content(self) -> bytes:
        if self._content is None:
            raise RuntimeError("the response's body has not been read (await aread())")
        return self._content

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")

    def json(self) -> Any:
        return json.loads(self.content)

    async def aclose(self) -> None:
        """Done with the response: a body not read to its end closes its connection."""
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.abort()


# ---- the client -------------------------------------------------------------------------------


class Client:
    """Keep-alive connections to the servers a model client talks to."""

    def __init__(
        self,
        *,
        timeout: float,
        connect_timeout: float | None = None,
        headers: Mapping[str, str] | None = None,
        follow_redirects: bool = True,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.timeout = timeout
        self.connect_timeout = timeout if connect_timeout is None else connect_timeout
        self.headers = {k.lower(): v for k, v in (headers or {}).items()}
        self.follow_redirects = follow_redirects
        self._env = os.environ if env is None else env
        self._proxies = _proxy_env(self._env)
        self._tls: ssl.SSLContext | None = None
        self._idle: dict[tuple[Any, ...], list[_Conn]] = {}
        self._closed = False

    # -- the pool

    def _release(self, conn: _Conn) -> None:
        h = conn.h11
        if self._closed or h.our_state is not h11.DONE or h.their_state is not h11.DONE:
            conn.abort()
            return
        try:
            h.start_next_cycle()
        except h11.LocalProtocolError:
            conn.abort()
            return
        self._idle.setdefault(conn.key, []).append(conn)

    def _idle_conn(self, key: tuple[Any, ...]) -> _Conn | None:
        pool = self._idle.get(key)
        while pool:
            conn = pool.pop()
            if conn.idle_alive():
                return conn
            conn.abort()
        return None

    async def _tls_context(self) -> ssl.SSLContext:
        if self._tls is None:  # reading and parsing the CA file: 40-100 ms off the event loop
            self._tls = await asyncio.to_thread(_tls_context, self._env)
        return self._tls

    async def _connect(self, target: _Target, proxy: _Target | None, timeout: float) -> _Conn:
        hop = proxy or target
        tls = await self._tls_context() if hop.scheme == "https" else None
        try:
            async with asyncio.timeout(timeout):
                reader, writer = await asyncio.open_connection(
                    hop.host,
                    hop.port,
                    ssl=tls,
                    server_hostname=hop.host if tls else None,
                    limit=READ_SIZE * 4,
                )
        except TimeoutError:
            raise ConnectTimeout(f"timed out connecting to {hop.host}:{hop.port}") from None
        except (OSError, ssl.SSLError, ssl.CertificateError) as exc:
            raise ConnectError(f"{exc or type(exc).__name__}") from exc
        conn = _Conn((target.origin, proxy.origin if proxy else None), reader, writer)
        if proxy is None or target.scheme != "https":
            return conn
        try:
            async with asyncio.timeout(timeout):
                await self._tunnel(conn, target, proxy, timeout)
        except BaseException as exc:
            conn.abort()
            if isinstance(exc, TimeoutError):
                raise ConnectTimeout(
                    f"timed out connecting to {target.host} through the proxy"
                ) from None
            if isinstance(exc, (OSError, ssl.SSLError, ssl.CertificateError)):
                raise ConnectError(f"{exc or type(exc).__name__}") from exc
            raise
        return conn

    async def _tunnel(self, conn: _Conn, target: _Target, proxy: _Target, timeout: float) -> None:
        """CONNECT through the proxy, then TLS with the target over the tunnel."""
        host = f"[{target.host}]" if ":" in target.host else target.host
        authority = f"{host}:{target.port}"
        head = [("host", authority), *_proxy_auth(proxy.url)]
        request = h11.Request(method="CONNECT", target=authority, headers=head)
        await conn.write(conn.h11.send(request) + conn.h11.send(h11.EndOfMessage()), timeout)
        event = await conn.next_event(timeout)
        if not isinstance(event, h11.Response) or not 200 <= event.status_code < 300:
            status = getattr(event, "status_code", "no answer")
            conn.abort()
            raise ProxyError(
                f"the proxy {proxy.host}:{proxy.port} refused CONNECT {authority}: {status}"
            )
        await conn.writer.start_tls(await self._tls_context(), server_hostname=target.host)
        # the tunnel's bytes are the target's HTTP
        conn.h11 = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_HEAD)

    # -- requests

    async def send(
        self,
        method: str,
        url: str,
        *,
        content: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> Response:
        """The response with its body unread (stream it or `aread`; `aclose` it), after
        the redirects. Raises a `TransportError` when the server cannot be reached."""
        if self._closed:
            raise RuntimeError("the HTTP client is closed")
        read_timeout = self.timeout if timeout is None else timeout
        connect_timeout = min(self.connect_timeout, read_timeout)
        sent = {**self.headers, **{k.lower(): v for k, v in (headers or {}).items()}}
        target = _Target(url)
        for _ in range(MAX_REDIRECTS + 1):
            response = await self._exchange(
                method, target, content, sent, read_timeout, connect_timeout
            )
            location = response.headers.get("location")
            if not (
                self.follow_redirects
                and response.status_code in (301, 302, 303, 307, 308)
                and location
            ):
                return response
            await response.aclose()
            url = urljoin(url, location)
            if (
                response.status_code == 303
                and method != "HEAD"
                or (response.status_code in (301, 302) and method == "POST")
            ):
                method, content = "GET", None
                sent.pop("content-type", None)
            after = _Target(url)
            upgrade = (
                target.scheme == "http"
                and after.scheme == "https"
                and target.host == after.host
                and target.port == 80
                and after.port == 443
            )
            if after.origin != target.origin and not upgrade:
                sent.pop("authorization", None)  # the key stays with the server it was meant for
            target = after
        raise TooManyRedirects(f"more than {MAX_REDIRECTS} redirects from {url}")

    async def _exchange(
        self,
        method: str,
        target: _Target,
        content: bytes | None,
        headers: Mapping[str, str],
        read_timeout: float,
        connect_timeout: float,
    ) -> Response:
        proxy = _proxy_for(target, self._proxies)
        absolute = proxy is not None and target.scheme == "http"  # an http proxy forwards it
        head = [("host", target.host_header), *headers.items()]
        if content is not None:
            head.append(("content-length", str(len(content))))
        if absolute and proxy is not None:
            head.extend(_proxy_auth(proxy.url))
        request = h11.Request(
            method=method, target=target.url if absolute else target.target, headers=head
        )
        key = (target.origin, proxy.origin if proxy else None)
        while True:
            conn = self._idle_conn(key)
            kept = conn is not None  # carried a request before: the server may have closed it
            if conn is None:
                conn = await self._connect(target, proxy, connect_timeout)
            try:
                try:
                    data = conn.h11.send(request)
                except h11.LocalProtocolError as exc:
                    raise LocalProtocolError(f"the request cannot be sent: {exc}") from None
                if content:
                    data += conn.h11.send(h11.Data(data=content))
                data += conn.h11.send(h11.EndOfMessage())
                await conn.write(data, read_timeout)
                event = await conn.next_event(read_timeout)
                while isinstance(event, h11.InformationalResponse):  # 100 Continue and such
                    event = await conn.next_event(read_timeout)
            except (RemoteProtocolError, NetworkError) as exc:
                conn.abort()
                if kept and _before_answer(exc):
                    continue  # the server closed the kept connection while it was idle
                raise
            except BaseException:
                conn.abort()
                raise
            if not isinstance(event, h11.Response):
                conn.abort()
                raise RemoteProtocolError(f"the server answered with {type(event).__name__}")
            if log.isEnabledFor(logging.DEBUG):  # httpx's line, at `--log-level debug` only
                log.debug(
                    'HTTP Request: %s %s "HTTP/1.1 %d %s"',
                    method,
                    target.url,
                    event.status_code,
                    event.reason.decode("latin-1"),
                )
            return Response(
                event.status_code,
                Headers.of(event.headers),
                target.url,
                event.reason.decode("latin-1"),
                conn=conn,
                client=self,
                read_timeout=read_timeout,
            )

    async def request(
        self,
        method: str,
        url: str,
        *,
        json_body: Any = None,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> Response:
        """`send` with the body read (and a JSON body, when given)."""
        content = None
        sent = dict(headers or {})
        if json_body is not None:
            content = json.dumps(json_body, ensure_ascii=False, separators=(",", ":")).encode()
            sent.setdefault("content-type", "application/json")
        response = await self.send(method, url, content=content, headers=sent, timeout=timeout)
        try:
            await response.aread()
        finally:
            await response.aclose()
        return response

    async def aclose(self) -> None:
        self._closed = True
        idle, self._idle = self._idle, {}
        for pool in idle.values():
            for conn in pool:
                await conn.close()


def _before_answer(exc: BaseException) -> bool:
    """A failure on a kept connection before the server answered anything: it closed the
    connection while idle (reset, EOF), not a failure of this request."""
    if isinstance(exc, RemoteProtocolError):
        return "without an answer" in str(exc)
    return isinstance(exc, (ReadError, WriteError))


__all__ = [
    "Client",
    "ConnectError",
    "ConnectTimeout",
    "HTTPError",
    "Headers",
    "LocalProtocolError",
    "NetworkError",
    "ProxyError",
    "ReadError",
    "ReadTimeout",
    "RemoteProtocolError",
    "Response",
    "TimeoutException",
    "TooManyRedirects",
    "TransportError",
    "UnsupportedProtocol",
    "WriteError",
    "WriteTimeout",
]
