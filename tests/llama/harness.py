"""A real llama.cpp `llama-server` for the tests, and a recorder in front of it.

`tests/llama/install-llama-server.sh` builds the server from the llama.cpp source vendored in
the llama-cpp-python sdist and fetches SmolLM2-135M-Instruct into a cache directory outside
the repository; `missing()` says why the tests cannot run when it has not been run.

`LlamaServer` starts the binary on a free port and waits for `/health`; `Recorder` is a plain
HTTP relay between ndomo and the server that keeps each request's body and the server's
answer (the event-stream chunks as parsed JSON), so a test sees what ndomo really sent and
what the real server really said.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import socket
import subprocess
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

LLAMA_CPP_PYTHON_VERSION = "0.3.36"  # as pinned in the install script
MODEL = "SmolLM2-135M-Instruct.Q4_1.gguf"
TOOLS_TEMPLATE = "Qwen-Qwen2.5-7B-Instruct.jinja"  # a ChatML template that renders tools
INSTALL = "tests/llama/install-llama-server.sh"


def install_dir() -> Path:
    if os.environ.get("NDOMO_LLAMA_SERVER_DIR"):
        return Path(os.environ["NDOMO_LLAMA_SERVER_DIR"])
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "ndomo" / f"llama-server-{LLAMA_CPP_PYTHON_VERSION}"


def binary() -> Path:
    return install_dir() / "bin" / "llama-server"


def model() -> Path:
    return install_dir() / MODEL


def tools_template() -> Path:
    return install_dir() / "templates" / TOOLS_TEMPLATE


def missing() -> str | None:
    """Why the llama-server tests cannot run here, or None."""
    if not os.access(binary(), os.X_OK):
        return f"no llama-server in {install_dir()}"
    if not model().is_file():
        return f"no {MODEL} in {install_dir()}"
    if not tools_template().is_file():
        return f"no {TOOLS_TEMPLATE} in {install_dir() / 'templates'}"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def get_json(url: str, timeout: float = 5.0) -> Any:
    with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 - a local test server
        return json.loads(resp.read())


class LlamaServer:
    """`llama-server` serving SmolLM2-135M on 127.0.0.1 (stopped, never left running)."""

    def __init__(
        self,
        log: Path,
        *,
        ctx: int = 2048,
        alias: str = "smollm2",
        template: Path | None = None,
        jinja: bool = True,
        threads: int = 2,
        extra: tuple[str, ...] = (),
    ) -> None:
        self.port = free_port()
        self.ctx = ctx
        self.alias = alias
        self.log_path = log
        self.template = template
        self.jinja = jinja
        self.threads = threads
        self.extra = extra  # more llama-server flags (the benchmark's --cache-ram 0)
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0) -> LlamaServer:
        cmd = [
            str(binary()),
            "-m", str(model()),
            "--alias", self.alias,
            "--host", "127.0.0.1",
            "--port", str(self.port),
            "-c", str(self.ctx),
            "-np", "1",  # one slot: the whole context serves one request at a time
            "-t", str(self.threads),
            # the chat template run by the Jinja engine (the default; --no-jinja refuses tools)
            "--jinja" if self.jinja else "--no-jinja",
            "--seed", "1",
            "--no-webui",
        ]  # fmt: skip
        if self.template is not None:
            cmd += ["--chat-template-file", str(self.template)]
        cmd += self.extra
        self.log = self.log_path.open("wb")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"llama-server exited ({self.proc.returncode}):\n{self.tail()}")
            with contextlib.suppress(OSError, ValueError):
                if get_json(f"{self.url}/health", timeout=2).get("status") == "ok":
                    return self
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"llama-server not ready after {timeout} s:\n{self.tail()}")

    def props(self) -> dict[str, Any]:
        return get_json(f"{self.url}/props")

    def tail(self, lines: int = 30) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        return ""

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        if self.proc is not None:
            self.log.close()

    def __enter__(self) -> LlamaServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class Exchange:
    """One request through the recorder and the server's answer."""

    def __init__(self, method: str, path: str, body: Any) -> None:
        self.method, self.path, self.body = method, path, body
        self.status = 0
        self.content_type = ""
        self.events: list[dict[str, Any]] = []  # the event stream's `data:` payloads
        self.answer: Any = None  # a whole (unstreamed) JSON answer
        self.done = threading.Event()

    @property
    def text(self) -> str:
        """The answer's text, joined from the streamed deltas."""
        return "".join(
            (c.get("delta") or {}).get("content") or ""
            for e in self.events
            for c in e.get("choices") or []
        )

    @property
    def content_chunks(self) -> int:
        return sum(
            1
            for e in self.events
            for c in e.get("choices") or []
            if (c.get("delta") or {}).get("content")
        )

    @property
    def finish_reason(self) -> str | None:
        reasons = [c.get("finish_reason") for e in self.events for c in e.get("choices") or []]
        return next((r for r in reversed(reasons) if r), None)

    @property
    def usage(self) -> dict[str, Any]:
        return next((e["usage"] for e in reversed(self.events) if e.get("usage")), {})


class Recorder:
    """An HTTP relay to `upstream` that records every exchange (chat requests in full)."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.removeprefix("http://")
        self.exchanges: list[Exchange] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            # HTTP/1.0: the answer ends when the connection closes, so a stream is passed on
            # as it comes without re-chunking it
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                recorder._relay(self, None)

            def do_POST(self) -> None:
                size = int(self.headers.get("content-length") or 0)
                recorder._relay(self, self.rfile.read(size))

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def chats(self) -> list[Exchange]:
        """The chat requests, each after its answer has been relayed in full."""
        out = [x for x in self.exchanges if x.path.endswith("/chat/completions")]
        for x in out:
            x.done.wait(30)
        return out

    def paths(self) -> list[str]:
        return [f"{x.method} {x.path}" for x in self.exchanges]

    def clear(self) -> None:
        self.exchanges.clear()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def _relay(self, handler: BaseHTTPRequestHandler, raw: bytes | None) -> None:
        body: Any = None
        if raw:
            with contextlib.suppress(ValueError):
                body = json.loads(raw)
        x = Exchange(handler.command, handler.path, body)
        self.exchanges.append(x)
        conn = http.client.HTTPConnection(self.upstream, timeout=120)
        try:
            headers = {
                k: v
                for k, v in handler.headers.items()
                if k.lower() not in ("host", "connection", "accept-encoding")
            }
            conn.request(handler.command, handler.path, body=raw, headers=headers)
            resp = conn.getresponse()
            x.status, x.content_type = resp.status, resp.getheader("content-type") or ""
            handler.send_response(resp.status)
            for k, v in resp.getheaders():
                if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                    handler.send_header(k, v)
            handler.send_header("connection", "close")
            handler.end_headers()
            if "text/event-stream" in x.content_type:
                while line := resp.readline():
                    handler.wfile.write(line)
                    handler.wfile.flush()
                    data = line.decode("utf-8", "replace").strip()
                    if data.startswith("data:") and data[5:].strip() != "[DONE]":
                        with contextlib.suppress(ValueError):
                            x.events.append(json.loads(data[5:]))
            else:
                whole = resp.read()
                handler.wfile.write(whole)
                with contextlib.suppress(ValueError):
                    x.answer = json.loads(whole)
        except OSError:
            # ndomo closed the request (a stopped stream: the server's side closes too), or
            # the server is gone: the client sees its connection end, as it would without us
            pass
        finally:
            conn.close()
            x.done.set()
