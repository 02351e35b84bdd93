"""A scripted Anthropic Messages API server for tests: real HTTP and server-sent events,
so the real `anthropic` SDK and ndomo's Anthropic client are exercised.

    with FakeAnthropic([{"text": "hi"}]) as fake: ... fake.url ...  (base URL, no /v1)

Each POST /v1/messages consumes one step: `text`, `tool_calls` [{name, arguments}],
`error` (an `error` event after the text), `status` (+ `body`) for an HTTP error.
"""

from __future__ import annotations

import json
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class FakeAnthropic:
    def __init__(
        self, script: list[dict[str, Any]] | None = None, default_text: str = "done"
    ) -> None:
        self.steps = list(script or [])
        self.default_text = default_text
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    def start(self) -> FakeAnthropic:
        fake = self

        class Handler(_Handler):
            owner = fake

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeAnthropic:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def push(self, step: dict[str, Any]) -> None:
        with self._lock:
            self.steps.append(step)

    def take(self) -> dict[str, Any]:
        with self._lock:
            return self.steps.pop(0) if self.steps else {"text": self.default_text}


class _Handler(BaseHTTPRequestHandler):
    owner: FakeAnthropic
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _event(self, kind: str, payload: dict[str, Any]) -> None:
        data = f"event: {kind}\ndata: {json.dumps({'type': kind, **payload})}\n\n".encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def do_GET(self) -> None:
        self.owner.requests.append({"method": "GET", "path": self.path, "body": None})
        if self.path.startswith("/v1/models"):
            return self._json(
                200,
                {
                    "data": [
                        {
                            "id": "claude-fake",
                            "type": "model",
                            "display_name": "Fake",
                            "created_at": "2025-01-01T00:00:00Z",
                        }
                    ],
                    "has_more": False,
                    "first_id": "claude-fake",
                    "last_id": "claude-fake",
                },
            )
        self._json(
            404, {"type": "error", "error": {"type": "not_found_error", "message": "no route"}}
        )

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        self.owner.requests.append(
            {
                "method": "POST",
                "path": self.path,
                "body": body,
                "headers": {k.lower(): v for k, v in self.headers.items()},
            }
        )
        if not self.path.startswith("/v1/messages"):
            return self._json(
                404, {"type": "error", "error": {"type": "not_found_error", "message": "no route"}}
            )
        step = self.owner.take()
        if step.get("status"):
            return self._json(
                step["status"],
                step.get("body")
                or {
                    "type": "error",
                    "error": {
                        "type": "invalid_request_error",
                        "message": step.get("message", "bad"),
                    },
                },
            )
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        usage = {
            "input_tokens": len(json.dumps(body)) // 4,
            "output_tokens": 1,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        }
        self._event(
            "message_start",
            {
                "message": {
                    "id": f"msg_{uuid.uuid4().hex[:10]}",
                    "type": "message",
                    "role": "assistant",
                    "model": body.get("model"),
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": usage,
                }
            },
        )
        index = 0
        text = step.get("text", "")
        if text:
            self._event(
                "content_block_start",
                {"index": index, "content_block": {"type": "text", "text": ""}},
            )
            for piece in (text[: len(text) // 2], text[len(text) // 2 :]):
                if piece:
                    self._event(
                        "content_block_delta",
                        {"index": index, "delta": {"type": "text_delta", "text": piece}},
                    )
            self._event("content_block_stop", {"index": index})
            index += 1
        if step.get("error"):
            self._event("error", {"error": {"type": "overloaded_error", "message": step["error"]}})
            self.wfile.write(b"0\r\n\r\n")
            return
        for call in step.get("tool_calls", []):
            args = json.dumps(call.get("arguments", {}))
            self._event(
                "content_block_start",
                {
                    "index": index,
                    "content_block": {
                        "type": "tool_use",
                        "id": call.get("id") or f"toolu_{uuid.uuid4().hex[:8]}",
                        "name": call["name"],
                        "input": {},
                    },
                },
            )
            for piece in (args[: len(args) // 2], args[len(args) // 2 :]):
                self._event(
                    "content_block_delta",
                    {"index": index, "delta": {"type": "input_json_delta", "partial_json": piece}},
                )
            self._event("content_block_stop", {"index": index})
            index += 1
        reason = "tool_use" if step.get("tool_calls") else "end_turn"
        self._event(
            "message_delta",
            {
                "delta": {"stop_reason": reason, "stop_sequence": None},
                "usage": {"output_tokens": 5},
            },
        )
        self._event("message_stop", {})
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
