from __future__ import annotations

import os
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ndomo import compose
from ndomo.runtime.context import TurnContext, TurnRequest
from ndomo.runtime.host import BaseHost
from ndomo.runtime.runtime import Runtime
from ndomo.runtime.tools import AllowAll


@pytest.fixture
def rt(app):
    plugins = compose.plugins()
    # These tests judge the mode fence and the tools; the agents' permission policy has its own tests.
    plugins.tools.policy = AllowAll()
    return Runtime(app, plugins)


@pytest.fixture
def make_ctx(rt):
    async def make(mode: str, host=None) -> TurnContext:
        state = await rt.session()
        ctx = TurnContext(
            app=rt.app,
            runtime=rt,
            host=host or BaseHost(),
            request=TurnRequest(prompt="test"),
            session=state,
            mode=mode,
            agent_name=state.agent,
        )
        ctx.tools = rt.plugins.tools.filter(ctx)
        return ctx

    return make


def alive(pid: int) -> bool:
    """A live, non-zombie process with this pid."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2 :].split()[0] not in ("Z", "X")


def pids_with_arg(arg: str) -> list[int]:
    """Live host pids whose command line has `arg` as one argument.

    A sandboxed command sees its own pid namespace, so the `$!` it reports is not a host pid;
    tests find its processes by a unique argument instead.
    """
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if arg.encode() in argv and alive(int(entry.name)):
            found.append(int(entry.name))
    return found


class _Handler(SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep test output quiet
        pass

    def do_GET(self):
        routes = self.server.routes  # type: ignore[attr-defined]
        if self.path in routes:
            status, headers, body = routes[self.path]
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.send_response(404)
        self.send_header("Content-Length", "9")
        self.end_headers()
        self.wfile.write(b"not found")


@pytest.fixture
def web():
    """A local HTTP server on 127.0.0.1; add routes to `.routes[path] = (status, headers, body)`."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.routes = {}  # type: ignore[attr-defined]
    server.daemon_threads = True
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    server.url = f"http://127.0.0.1:{server.server_address[1]}"  # type: ignore[attr-defined]
    yield server
    server.shutdown()
    server.server_close()


assert os.name == "posix"
