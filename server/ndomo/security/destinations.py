"""Network by destination: a shell command reaches the hosts `sandbox.destinations` names
for it, and nothing else.

The command runs in bubblewrap's own network namespace (offline: only its loopback). The
inner relay (relay_inner.py, `ask` mode) listens on the sandbox's 127.0.0.1:PORT and, for
each connection, asks ndomo for a socket; ndomo answers with one end of a socket pair whose
other end this module's proxy serves — no port is opened on the host. `HTTP_PROXY` and
`HTTPS_PROXY` (both cases) point the command's tools there (pip, npm, curl, git, Python's
urllib and requests read them). The proxy takes `CONNECT host:port` (HTTPS and any TLS) and
absolute-URI HTTP requests, connects only to an allowed destination, and answers 403 with
the reason otherwise. A tool that ignores the proxy variables reaches nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ndomo.security.hosts import Destination
from ndomo.security.relay import Broker

log = logging.getLogger("ndomo.sandbox")

HEAD_BYTES = 16_384  # a request head longer than this is refused
HEAD_TIMEOUT_S = 30.0
CONNECT_TIMEOUT_S = 15.0
INNER_PORT = 3128  # the proxy's port on the sandbox's own loopback


def destinations_for(command: str, rules: Mapping[str, Sequence[str]]) -> list[str] | None:
    """The destinations of every `sandbox.destinations` pattern that matches the whole
    command line (each of its simple commands), or None when none matches."""
    from ndomo.security.shell import decide

    hosts: list[str] = []
    matched = False
    for pattern, names in rules.items():
        if decide(command, {pattern: "allow"}).action == "allow":  # no rule matched: ask
            matched = True
            hosts += [n for n in names if n not in hosts]
    return hosts if matched else None


def proxy_env(port: int = INNER_PORT) -> dict[str, str]:
    url = f"http://127.0.0.1:{port}"
    env = {name: url for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")}
    env.update(NO_PROXY="", no_proxy="")
    return env


class Gate:
    """The allowed destinations of one command, and the proxy that enforces them."""

    def __init__(self, entries: Sequence[str]) -> None:
        self.allowed = [Destination.parse(e) for e in entries]
        self.refused: list[str] = []  # "host:port" asked and refused, for the tool result

    def admits(self, host: str, port: int) -> Destination | None:
        return next((d for d in self.allowed if d.allows(host, port)), None)

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await self._serve(reader, writer)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError):
            pass
        finally:
            writer.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_TIMEOUT_S)
        line = head.split(b"\r\n", 1)[0].decode("latin-1")
        parts = line.split(" ")
        if len(parts) != 3:
            return await _refuse(writer, 400, "not an HTTP proxy request")
        method, target, version = parts
        if method == "CONNECT":
            host, port = _split_host(target, 443)
            rest = b""
        else:
            if not target.startswith("http://"):
                return await _refuse(writer, 400, "the proxy takes CONNECT or http:// requests")
            authority, _, path = target[len("http://") :].partition("/")
            host, port = _split_host(authority, 80)
            rest = f"{method} /{path} {version}".encode("latin-1") + head[len(line) :]
        if host is None:
            return await _refuse(writer, 400, f"no host in {target!r}")
        dest = self.admits(host, port)
        if dest is None:
            self.refused.append(f"{host}:{port}")
            return await _refuse(
                writer,
                403,
                f"{host}:{port} is not a destination this command may reach (sandbox.destinations)",
            )
        try:
            up_r, up_w = await _connect(host, port, dest)
        except (OSError, TimeoutError) as exc:
            return await _refuse(writer, 502, f"cannot reach {host}:{port}: {exc}")
        try:
            if method == "CONNECT":
                writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
                await writer.drain()
            else:
                up_w.write(rest)
                await up_w.drain()
            await asyncio.gather(_pipe(reader, up_w), _pipe(up_r, writer))
        finally:
            up_w.close()


def _split_host(authority: str, default: int) -> tuple[str | None, int]:
    authority = authority.rsplit("@", 1)[-1]
    if authority.startswith("["):
        end = authority.find("]")
        host, rest = authority[1:end], authority[end + 1 :]
        port = rest[1:] if rest.startswith(":") else ""
    elif authority.count(":") == 1:
        host, port = authority.split(":")
    else:
        host, port = authority, ""
    if not host or (port and not port.isdigit()):
        return None, 0
    return host, int(port) if port else default


async def _connect(
    host: str, port: int, dest: Destination
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A connection to an allowed host. A named host must not resolve to the machine's own
    or link-local addresses (a domain pointed at 127.0.0.1 would open every local service);
    only a loopback destination the user wrote reaches loopback."""
    loop = asyncio.get_running_loop()
    infos = await asyncio.wait_for(
        loop.getaddrinfo(host, port, type=socket.SOCK_STREAM), CONNECT_TIMEOUT_S
    )
    for *_, addr in infos:
        ip = ipaddress.ip_address(str(addr[0]))
        local = ip.is_loopback or ip.is_link_local or ip.is_unspecified
        if local and not dest.loopback:
            raise OSError(f"{host} resolves to {ip}, a local address")
    family, _, _, _, addr = infos[0]
    return await asyncio.wait_for(
        asyncio.open_connection(str(addr[0]), int(addr[1]), family=family), CONNECT_TIMEOUT_S
    )


async def _refuse(writer: asyncio.StreamWriter, code: int, why: str) -> None:
    reason = {400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway"}[code]
    body = f"ndomo: {why}\n".encode()
    writer.write(
        f"HTTP/1.1 {code} {reason}\r\nContent-Type: text/plain\r\nContent-Length: {len(body)}\r\n"
        f"Connection: close\r\n\r\n".encode()
        + body
    )
    with contextlib.suppress(OSError):
        await writer.drain()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (OSError, RuntimeError):
        pass


class ProxyBroker(Broker):
    """The host's side of the inner relay for a proxied command: each connection from
    inside gets one end of a socket pair; the gate serves the other end."""

    def __init__(self, gate: Gate) -> None:
        super().__init__(INNER_PORT)
        self.gate = gate
        self._served: set[asyncio.Task] = set()

    async def _answer(self, loop: asyncio.AbstractEventLoop) -> None:
        inside, ours = socket.socketpair()
        try:
            await asyncio.to_thread(socket.send_fds, self.ours, [b"c"], [inside.fileno()])
        except OSError:
            ours.close()
            return
        finally:
            inside.close()
        task = asyncio.ensure_future(self._serve(ours))
        self._served.add(task)
        task.add_done_callback(self._served.discard)

    async def _serve(self, sock: socket.socket) -> None:
        sock.setblocking(False)
        reader, writer = await asyncio.open_connection(sock=sock)
        await self.gate.serve(reader, writer)

    async def aclose(self) -> None:
        await super().aclose()
        for task in list(self._served):
            task.cancel()
        for task in list(self._served):
            with contextlib.suppress(BaseException):
                await task


def refused_line(gate: Gate) -> str | None:
    if not gate.refused:
        return None
    shown = ", ".join(dict.fromkeys(gate.refused))
    return f"network: refused {shown} (not in sandbox.destinations for this command)"


@dataclass
class Proxied:
    """What a command with destinations runs with: the inner relay before its shell, the
    proxy variables, the relay's socket; `close` after the command ended."""

    broker: ProxyBroker
    argv: list[str]
    env: dict[str, str]
    fds: tuple[int, ...]

    @classmethod
    def start(cls, destinations: Sequence[str] | None) -> Proxied | None:
        if destinations is None:
            return None
        from ndomo.security.relay import inner_argv

        broker = ProxyBroker(Gate(destinations))
        broker.start()
        fd = broker.theirs.fileno()
        return cls(broker, inner_argv("ask", fd, INNER_PORT), proxy_env(), (fd,))

    async def close(self) -> list[str]:
        """The tool result's lines about the network (the hosts refused)."""
        await self.broker.aclose()
        line = refused_line(self.broker.gate)
        return [line] if line else []
