"""A `sandbox.destinations` entry: the host (and port) a command may reach. Imports nothing
from ndomo: the configuration checks entries with it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})
WEB_PORTS = (80, 443)


class DestinationError(ValueError):
    """A `sandbox.destinations` entry that names no destination."""


@dataclass(frozen=True)
class Destination:
    """`host` (ports 80 and 443), `host:port`, `*.domain` (its subdomains), or a loopback
    name with a port (`localhost:5432`, `127.0.0.1:8000`)."""

    host: str  # lower case, no trailing dot, IPv6 without brackets
    port: int | None

    @classmethod
    def parse(cls, text: str) -> Destination:
        raw = text.strip().lower().rstrip(".")
        host, port = raw, None
        if raw.startswith("["):  # [::1]:8000
            end = raw.find("]")
            host, rest = raw[1:end], raw[end + 1 :]
            if rest:
                port = _port(rest.removeprefix(":"), text)
        elif raw.count(":") == 1:
            host, port_text = raw.split(":")
            port = _port(port_text, text)
        if not host or any(c in host for c in "/@ \t") or host in ("*", "*."):
            raise DestinationError(f"{text!r}: give a host, host:port or *.domain")
        if host in LOOPBACK_NAMES and port is None:
            raise DestinationError(f"{text!r}: a loopback destination needs its port")
        return cls(host, port)

    def allows(self, host: str, port: int) -> bool:
        host = host.lower().rstrip(".").strip("[]")
        if self.port is None and port not in WEB_PORTS:
            return False
        if self.port is not None and port != self.port:
            return False
        if self.host.startswith("*."):
            return host.endswith(self.host[1:]) and host != self.host[2:]
        return host == self.host

    @property
    def loopback(self) -> bool:
        return self.host in LOOPBACK_NAMES


def _port(text: str, whole: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise DestinationError(f"{whole!r}: {text!r} is not a port")
    return int(text)


def check_entries(entries: Sequence[str]) -> None:
    """Raises DestinationError for the first entry that names no destination."""
    for e in entries:
        Destination.parse(e)
