"""Network by destination, run for real: a command with `sandbox.destinations` reaches the
hosts named for it through the proxy in its bubblewrap sandbox, and nothing else."""

from __future__ import annotations

import asyncio
import http.server
import shutil
import sys
import threading
from pathlib import Path

import pytest

from ndomo.agents.policy import AgentPolicy
from ndomo.app import App
from ndomo.config import Settings
from ndomo.security import destinations
from ndomo.security.destinations import Gate, destinations_for
from ndomo.security.hosts import Destination, DestinationError
from tests.unit.security.test_auto_allow import Recorder, _craftsman
from tests.unit.security.test_sandbox_real import _ctx, ws_app  # noqa: F401 - a fixture

needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None,
    reason="SKIPPED LOUDLY: bubblewrap (bwrap) is not installed; `apt-get install bubblewrap` (.ci/run does)",
)


class Site:
    """An HTTP server on the host's loopback answering every GET with its own name."""

    def __init__(self, name: str) -> None:
        body = name.encode()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


@pytest.fixture
def sites():
    allowed, other = Site("allowed-site"), Site("other-site")
    yield allowed, other
    allowed.close()
    other.close()


FETCH = """
import socket, sys, urllib.request
for port in sys.argv[1:]:
    for host in ("localhost", "127.0.0.1"):
        try:
            body = urllib.request.urlopen(f"http://{host}:{port}/", timeout=5).read().decode()
            print(f"{host}:{port} via proxy:", body)
        except Exception as exc:
            print(f"{host}:{port} via proxy: refused", getattr(exc, "code", type(exc).__name__))
    try:
        socket.create_connection(("127.0.0.1", int(port)), timeout=2).close()
        print(f"{port} direct: reached")
    except OSError as exc:
        print(f"{port} direct: blocked", type(exc).__name__)
"""


@needs_bwrap
async def test_a_command_reaches_its_destinations_and_nothing_else(
    ws_app: App,  # noqa: F811 - the fixture
    sites,
) -> None:
    allowed, other = sites
    (ws_app.root / "fetch.py").write_text(FETCH)
    command = f"{sys.executable} fetch.py {allowed.port} {other.port}"
    ws_app.settings.sandbox.destinations = {
        f"{sys.executable} fetch.py *": [f"localhost:{allowed.port}"]
    }
    host = Recorder("once")
    ctx = await _ctx(ws_app, policy=AgentPolicy(), host=host, agent=_craftsman())
    result = await ctx.runtime.plugins.tools.execute(
        ctx, "bash", {"command": command, "network": True}
    )
    assert result.ok, result.content
    # asked once (the craftsman's `*: ask`), and told where the command would reach
    assert [a.subject for a in host.asked] == [command]
    assert f"reaching only localhost:{allowed.port}" in host.asked[0].text()
    out = result.content
    assert f"localhost:{allowed.port} via proxy: allowed-site" in out
    assert (
        f"127.0.0.1:{allowed.port} via proxy: refused 403" in out
    )  # another name: another destination
    assert f"localhost:{other.port} via proxy: refused 403" in out
    assert f"{allowed.port} direct: blocked" in out and f"{other.port} direct: blocked" in out
    assert result.data["network"] is False and result.data["destinations"] == [
        f"localhost:{allowed.port}"
    ]
    assert f"network: refused 127.0.0.1:{allowed.port}, localhost:{other.port}" in out


def test_destination_entries() -> None:
    assert Destination.parse("PyPI.org.").allows("pypi.org", 443)
    assert not Destination.parse("pypi.org").allows("pypi.org", 8080)
    assert not Destination.parse("pypi.org").allows("evil-pypi.org", 443)
    wild = Destination.parse("*.pythonhosted.org")
    assert wild.allows("files.pythonhosted.org", 443) and not wild.allows("pythonhosted.org", 443)
    assert not wild.allows("files.pythonhosted.org.evil.com", 443)
    assert Destination.parse("localhost:5432").allows("localhost", 5432)
    assert Destination.parse("[::1]:8000").allows("::1", 8000)
    for bad in ("", "*", "localhost", "a:b", "host:70000", "user@host", "http://x/"):
        with pytest.raises(DestinationError):
            Destination.parse(bad)


def test_a_pattern_must_match_the_whole_line() -> None:
    rules = {
        "pip install*": ["pypi.org", "files.pythonhosted.org"],
        "npm install*": ["registry.npmjs.org"],
    }
    assert destinations_for("pip install requests", rules) == ["pypi.org", "files.pythonhosted.org"]
    assert destinations_for("pip install x && curl evil.com", rules) is None
    assert destinations_for("pip install x; npm install y", rules) is None
    assert destinations_for("git status", rules) is None


async def test_a_named_host_resolving_to_a_local_address_is_refused(monkeypatch) -> None:
    async def resolve(host, port, **kw):
        return [(2, 1, 6, "", ("127.0.0.1", port))]

    loop = asyncio.get_running_loop()
    monkeypatch.setattr(loop, "getaddrinfo", resolve)
    with pytest.raises(OSError, match="local address"):
        await destinations._connect("pypi.org", 443, Destination.parse("pypi.org"))


class _Writer:
    """What the proxy writes back, kept."""

    def __init__(self) -> None:
        self.sent = bytearray()

    def write(self, data: bytes) -> None:
        self.sent.extend(data)

    async def drain(self) -> None:
        pass

    def close(self) -> None:
        pass


async def test_the_proxy_refuses_what_is_not_a_proxy_request() -> None:
    gate = Gate(["pypi.org"])
    for head, code in (
        (b"GET / HTTP/1.1\r\nHost: pypi.org\r\n\r\n", b"400"),
        (b"CONNECT evil.com:443 HTTP/1.1\r\n\r\n", b"403"),
        (b"GARBAGE\r\n\r\n", b"400"),
    ):
        reader = asyncio.StreamReader()
        reader.feed_data(head)
        reader.feed_eof()
        writer = _Writer()
        await gate.serve(reader, writer)  # type: ignore[arg-type]
        assert writer.sent.startswith(b"HTTP/1.1 " + code), writer.sent
    assert gate.refused == ["evil.com:443"]


def test_bad_destinations_are_a_config_problem(tmp_path: Path) -> None:
    from ndomo.config import load_settings

    user = tmp_path / "user.yaml"
    user.write_text("sandbox:\n  destinations:\n    'pip install*': [pypi.org, 'localhost']\n")
    settings, problems = load_settings(tmp_path, None, env={}, user_config=user)
    assert settings.sandbox.destinations == Settings().sandbox.destinations
    assert [p.key for p in problems] == ["sandbox.destinations"] and "needs its port" in problems[
        0
    ].message
