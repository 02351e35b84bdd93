"""A scripted, OpenAI-compatible HTTP server for tests.

Real sockets on 127.0.0.1 so the real client code (SDK, HTTP, SSE parsing,
retries, cancellation) is exercised. Each chat request consumes one step of
the script; when it runs out the server answers `default_text`.

Server behaviours of real local servers (each off by default): `stream_tools=False`
(llama-cpp-python: a streamed request with tools gets an event stream with no chunk),
`tools=False` (Ollama: 400 "does not support tools"), `n_ctx` (a context limit, with
llama.cpp's or OpenAI's error), `props` (llama.cpp's /props), `ollama` (/api/show),
`max_model_len` (vLLM's /v1/models). Prompt tokens are counted as request bytes / 4.

In-process:   with FakeModel(script=[{"text": "hi"}]) as fake: ... fake.url ...
As a process: python -m tests.fakes.fake_model --script s.json [--port N] [--record FILE]
              prints "READY <url>" and serves until killed. Steps can be added
              later with POST <url>/_fake/steps (a step or a list of steps);
              GET <url>/_fake/requests returns the recorded requests.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import select
import signal
import socket
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

ERROR_TEXT = {
    400: "bad request",
    401: "Incorrect API key provided",
    403: "forbidden",
    404: "The model does not exist",
    429: "Rate limit reached, please retry later",
    500: "internal server error",
    502: "bad gateway",
    503: "model is loading",
}


class FakeToolCall(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    arguments: dict[str, Any] | str = Field(
        default_factory=dict
    )  # a str is sent verbatim (garbage JSON)
    id: str | None = None


class Step(BaseModel):
    """One scripted answer. Fields combine: e.g. delay + text + tool_calls."""

    model_config = ConfigDict(extra="forbid")
    match: str | None = None  # only for a request whose last user/tool message contains this
    text: str | None = None
    chunks: int = Field(default=1, ge=1)
    tool_calls: list[FakeToolCall] = Field(default_factory=list)
    finish_reason: str | None = None
    status: int | None = None
    body: Any = None
    headers: dict[str, str] = Field(default_factory=dict)
    delay: float = Field(default=0.0, ge=0)
    chunk_delay: float = Field(default=0.0, ge=0)  # pause before each chunk after the first piece
    # a streamed reply: after the first piece, the rest waits until this file exists (a slow
    # model the test lets go on when it has seen the first piece; a hang-up is noticed)
    hold_until: str | None = None
    cut: bool = False
    garbage: bool = False
    huge: int | None = Field(default=None, ge=0)
    usage: bool = True  # False: ignore stream_options.include_usage, like some local servers
    empty: bool = False  # a streamed reply: event stream opened, ended without a chunk
    stream_error: str | None = None  # a streamed reply: an `error` event after the first piece
    # streamed before the answer as `reasoning_content` deltas (llama.cpp with --jinja and a
    # reasoning model, vLLM, DeepSeek), in `reasoning_chunks` pieces
    reasoning: str | None = None
    reasoning_chunks: int = Field(default=1, ge=1)
    # a model that never stops on its own (streamed): "repeat" sends `text` over and over
    # (a small local model's loop), "varied" sends text that never repeats; either ends
    # only at the request's max_tokens (finish_reason "length"), as llama.cpp does — or at
    # RUNAWAY_LIMIT tokens, so a test cannot hang forever
    runaway: Literal["repeat", "varied"] | None = None


RUNAWAY_LIMIT = 200_000  # tokens; a runaway answer's own end when the request sets no cap
CHARS_PER_TOKEN = 4  # how the fake counts an answer's tokens (prompts: bytes / 4)


def output_cap(body: dict[str, Any]) -> int | None:
    """The request's answer cap, under either of OpenAI's names."""
    cap = body.get("max_completion_tokens", body.get("max_tokens"))
    return cap if isinstance(cap, int) and cap > 0 else None


def prompt_tokens(body: dict[str, Any]) -> int:
    """The fake's tokenizer: bytes of messages + tools (compact JSON) / 4."""

    def size(v: Any) -> int:
        return len(json.dumps(v, ensure_ascii=False, separators=(",", ":")).encode())

    return (size(body.get("messages", [])) + (size(body["tools"]) if body.get("tools") else 0)) // 4


def load_script(data: Any) -> tuple[list[Step], str | None]:
    """A script is a list of steps, or {"steps": [...], "default_text": "..."}."""
    default = None
    if isinstance(data, dict):
        default = data.get("default_text")
        data = data.get("steps", [])
    if not isinstance(data, list):
        raise ValueError("script must be a list of steps or an object with 'steps'")
    return [s if isinstance(s, Step) else Step.model_validate(s) for s in data], default


def _last_prompt(body: Any) -> str:
    messages = body.get("messages") if isinstance(body, dict) else None
    for m in reversed(messages or []):
        if isinstance(m, dict) and m.get("role") in ("user", "tool"):
            content = m.get("content")
            if isinstance(content, list):  # content parts
                return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
            return str(content or "")
    return ""


def varied_text(size: int, offset: int = 0) -> str:
    """`size` characters of text that never repeats: numbered words."""
    out: list[str] = []
    length, i = 0, offset // 8
    while length < size + 16:
        word = f"w{i:06d} "
        out.append(word)
        length += len(word)
        i += 1
    start = offset % 8
    return "".join(out)[start : start + size]


def _split(text: str, n: int) -> list[str]:
    if not text:
        return []
    n = max(1, min(n, len(text)))
    size = -(-len(text) // n)
    return [text[i : i + size] for i in range(0, len(text), size)]


class _ClientGone(Exception):
    pass


class FakeModel:
    def __init__(
        self,
        script: list[dict[str, Any] | Step] | None = None,
        default_text: str = "done",
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        models: list[str] | None = None,
        strict_models: bool = False,
        api_key: str | None = None,
        record: str | Path | None = None,
        stream_tools: bool = True,
        tools: bool = True,
        n_ctx: int | None = None,
        context_error: str = "llamacpp",
        props: bool | dict[str, Any] = False,  # a dict: more /props fields (chat_template_caps)
        ollama: dict[str, Any] | None = None,
        max_model_len: int | None = None,
        refuse_max_tokens: bool = False,
    ) -> None:
        self._steps, default = load_script(list(script or []))
        self.default_text = default if default is not None else default_text
        self.models = list(models or ["fake-model"])
        self.strict_models = strict_models  # 404 for a model not in `models`
        self.api_key = api_key  # when set, other keys get 401
        self.stream_tools = stream_tools
        self.tools = tools
        self.n_ctx = n_ctx
        self.context_error = context_error  # "llamacpp" or "openai" wording
        self.props = props
        self.ollama = ollama  # {"num_ctx": int?, "context_length": int, "capabilities": [...]}
        self.max_model_len = max_model_len
        self.refuse_max_tokens = (
            refuse_max_tokens  # OpenAI's reasoning models: max_completion_tokens only
        )
        self.requests: list[dict[str, Any]] = []
        self.disconnects: list[int] = []  # request numbers whose client went away early
        self._record = Path(record) if record else None
        self._lock = threading.Lock()
        self._gone = threading.Condition(self._lock)
        self._host, self._port = host, port
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._conns: set[socket.socket] = set()

    # ---- lifecycle -------------------------------------------------------
    def start(self) -> FakeModel:
        fake = self

        class Handler(_Handler):
            owner = fake

        self._server = ThreadingHTTPServer((self._host, self._port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="fake-model",
            daemon=True,
        )
        self._thread.start()
        return self

    @property
    def port(self) -> int:
        assert self._server is not None, "FakeModel not started"
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        return f"http://{self._host}:{self.port}/v1"

    def stop(self) -> None:
        if self._server is None:
            return
        self._server.shutdown()
        with self._lock:
            conns = list(self._conns)
        for conn in conns:  # idle keep-alive connections would pin handler threads
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        self._server.server_close()
        self._server = None

    def __enter__(self) -> FakeModel:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- script ----------------------------------------------------------
    def push(self, step: dict[str, Any] | Step) -> None:
        parsed = step if isinstance(step, Step) else Step.model_validate(step)
        with self._lock:
            self._steps.append(parsed)

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._steps)

    def _take(self, body: Any) -> Step:
        prompt = _last_prompt(body)
        with self._lock:
            for i, step in enumerate(self._steps):
                if step.match is not None and step.match in prompt:
                    return self._steps.pop(i)
            for i, step in enumerate(self._steps):
                if step.match is None:
                    return self._steps.pop(i)
        return Step(text=self.default_text)

    def chat_requests(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if r["path"].endswith("/chat/completions")]

    def wait_for_disconnect(self, timeout: float = 10.0) -> bool:
        """Block until some request's client hung up early (for cancellation tests)."""
        with self._gone:
            return self._gone.wait_for(lambda: bool(self.disconnects), timeout)

    def _note(self, record: dict[str, Any]) -> int:
        with self._lock:
            self.requests.append(record)
            number = len(self.requests) - 1
            if self._record is not None:
                with self._record.open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps(record) + "\n")
        return number

    def _note_gone(self, number: int) -> None:
        with self._gone:
            self.disconnects.append(number)
            self._gone.notify_all()


class _Handler(BaseHTTPRequestHandler):
    owner: FakeModel
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
        pass

    def setup(self) -> None:
        super().setup()
        with self.owner._lock:
            self.owner._conns.add(self.connection)

    def finish(self) -> None:
        with self.owner._lock:
            self.owner._conns.discard(self.connection)
        with contextlib.suppress(OSError):
            super().finish()

    # ---- plumbing ----------------------------------------------------------
    def _read_body(self) -> tuple[bytes, Any]:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            return raw, json.loads(raw) if raw else None
        except ValueError:
            return raw, None

    def _record(self, body: Any, raw: bytes) -> int:
        return self.owner._note(
            {
                "method": self.command,
                "path": self.path,
                "at": time.time(),  # when the body was read (wall clock: other processes compare)
                "headers": {k.lower(): v for k, v in self.headers.items()},
                "body": body if body is not None or not raw else raw.decode("utf-8", "replace"),
            }
        )

    def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self._send_bytes(status, data, "application/json", headers)

    def _send_bytes(
        self, status: int, data: bytes, ctype: str, headers: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _wait(self, seconds: float) -> None:
        """Sleep, but notice a client that hangs up meanwhile (cancellation tests rely on it)."""
        deadline = time.monotonic() + seconds
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            readable, _, _ = select.select([self.connection], [], [], min(left, 0.05))
            if readable:
                try:
                    if self.connection.recv(1, socket.MSG_PEEK) == b"":
                        raise _ClientGone
                except (ConnectionError, OSError):
                    raise _ClientGone from None

    def _chunk(self, data: bytes) -> None:
        try:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
        except (ConnectionError, OSError):
            raise _ClientGone from None

    def _sse(self, payload: Any) -> None:
        self._chunk(b"data: " + json.dumps(payload).encode() + b"\n\n")

    def _auth_ok(self) -> bool:
        if self.owner.api_key is None:
            return True
        return self.headers.get("authorization") == f"Bearer {self.owner.api_key}"

    def _error(
        self,
        status: int,
        message: str,
        headers: dict[str, str] | None = None,
        code: str | None = None,
    ) -> None:
        self._send_json(
            status, {"error": {"message": message, "type": "fake_error", "code": code}}, headers
        )

    # ---- routes ----------------------------------------------------------
    def do_GET(self) -> None:
        raw, body = b"", None
        self._record(body, raw)
        if self.path.rstrip("/") in ("/v1/models", "/models"):
            if not self._auth_ok():
                return self._error(401, ERROR_TEXT[401], code="invalid_api_key")
            data = [
                {"id": m, "object": "model", "created": 0, "owned_by": "fake"}
                for m in self.owner.models
            ]
            if self.owner.max_model_len:
                for d in data:
                    d["max_model_len"] = self.owner.max_model_len
            return self._send_json(200, {"object": "list", "data": data})
        if self.path == "/props" and self.owner.props:
            n_ctx = self.owner.n_ctx or 4096
            return self._send_json(
                200,
                {
                    "default_generation_settings": {"n_ctx": n_ctx, "params": {}},
                    "total_slots": 1,
                    "model_path": "/models/fake.gguf",
                    **(self.owner.props if isinstance(self.owner.props, dict) else {}),
                },
            )
        if self.path == "/_fake/requests":
            return self._send_json(200, self.owner.requests)
        self._error(404, f"no route {self.path}")

    def do_POST(self) -> None:
        raw, body = self._read_body()
        if self.path == "/_fake/steps":
            try:
                for step in body if isinstance(body, list) else [body]:
                    self.owner.push(step)
            except Exception as exc:  # noqa: BLE001 - the fake answers any bad step with a 400 the test sees
                return self._error(400, f"bad step: {exc}")
            return self._send_json(200, {"remaining": self.owner.remaining})
        number = self._record(body, raw)
        if self.path == "/api/show" and self.owner.ollama is not None:
            return self._api_show()
        if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
            return self._error(404, f"no route {self.path}")
        if not isinstance(body, dict):
            return self._error(400, "request body is not a JSON object")
        if not self._auth_ok():
            return self._error(401, ERROR_TEXT[401], code="invalid_api_key")
        model = str(body.get("model", ""))
        if self.owner.strict_models and model not in self.owner.models:
            return self._error(404, f"The model '{model}' does not exist", code="model_not_found")
        refusal = self._refusal(body, model)
        if refusal is not None:
            try:
                return refusal()
            except _ClientGone:
                self.close_connection = True
                return self.owner._note_gone(number)
        step = self.owner._take(body)
        try:
            self._answer(step, body, model)
        except _ClientGone:
            self.close_connection = True
            self.owner._note_gone(number)

    def _api_show(self) -> None:
        o = self.owner.ollama or {}
        params = (
            f"num_ctx                        {o['num_ctx']}"
            if o.get("num_ctx")
            else 'stop "<|im_end|>"'
        )
        self._send_json(
            200,
            {
                "modelfile": "FROM fake",
                "parameters": params,
                "template": "{{ .Prompt }}",
                "details": {"family": "llama"},
                "model_info": {
                    "general.architecture": "llama",
                    "llama.context_length": o.get("context_length", 32768),
                },
                "capabilities": o.get("capabilities", ["completion", "tools"]),
            },
        )

    def _refusal(self, body: dict[str, Any], model: str) -> Any:
        """A server-level refusal (no script step is used): tools, context, streaming."""
        owner = self.owner
        if owner.refuse_max_tokens and "max_tokens" in body:
            # OpenAI's API for its reasoning models, word for word.
            return lambda: self._send_json(
                400,
                {
                    "error": {
                        "message": "Unsupported parameter: 'max_tokens' is not supported with this "
                        "model. Use 'max_completion_tokens' instead.",
                        "type": "invalid_request_error",
                        "param": "max_tokens",
                        "code": "unsupported_parameter",
                    }
                },
            )
        if body.get("tools") and not owner.tools:
            # Ollama's OpenAI-compatible endpoint, word for word.
            return lambda: self._error(
                400, f"registry.ollama.ai/library/{model} does not support tools", code=None
            )
        if owner.n_ctx is not None:
            tokens = prompt_tokens(body)
            if tokens > owner.n_ctx:
                if owner.context_error == "openai":
                    return lambda: self._send_json(
                        400,
                        {
                            "error": {
                                "message": f"This model's maximum context length is {owner.n_ctx} tokens. "
                                "However, your "
                                f"messages resulted in {tokens} tokens. Please reduce the length of the messages.",
                                "type": "invalid_request_error",
                                "param": "messages",
                                "code": "context_length_exceeded",
                            }
                        },
                    )
                return lambda: self._send_json(
                    400,
                    {
                        "error": {
                            "code": 400,
                            "message": "the request exceeds the available context size, try increasing it",
                            "type": "exceed_context_size_error",
                            "n_prompt_tokens": tokens,
                            "n_ctx": owner.n_ctx,
                        }
                    },
                )
        if body.get("stream") and body.get("tools") and not owner.stream_tools:
            # llama-cpp-python: "Automatic streaming tool choice is not supported" goes to its log;
            # the client gets an event stream that ends with nothing in it.
            return lambda: self._empty_stream()
        return None

    def _empty_stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self._chunk(b"")

    def _answer(self, step: Step, body: dict[str, Any], model: str) -> None:
        if step.delay:
            self._wait(step.delay)
        if step.status is not None:
            payload = (
                step.body
                if step.body is not None
                else {
                    "error": {
                        "message": ERROR_TEXT.get(step.status, "error"),
                        "type": "fake_error",
                        "code": None,
                    }
                }
            )
            return self._send_json(step.status, payload, step.headers)
        if step.garbage:
            return self._send_bytes(
                200, b"<html>502 Bad Gateway? not JSON at all", "text/html", step.headers
            )
        text = step.text or ""
        if step.huge is not None:
            text = varied_text(step.huge)
        if step.cut and not text:
            text = "this answer will be cut off"
        if body.get("stream") and step.empty:
            return self._empty_stream()
        if step.runaway is not None and body.get("stream"):
            return self._runaway(step, body, model, text or "I'm glad you're here. ")
        cap = output_cap(body)
        if cap is not None and len(text) > cap * CHARS_PER_TOKEN:
            # like every real server: the answer stops at the cap, finish_reason "length"
            text = text[: cap * CHARS_PER_TOKEN]
            step = step.model_copy(update={"finish_reason": "length", "tool_calls": []})
        if body.get("stream"):
            self._stream(step, body, model, text)
        else:
            self._whole(step, body, model, text)

    def _runaway(self, step: Step, body: dict[str, Any], model: str, unit: str) -> None:
        """Streams until the request's cap (or RUNAWAY_LIMIT): 4 tokens a chunk."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        base = {
            "id": f"chatcmpl-{uuid.uuid4().hex[:10]}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model,
        }
        limit = output_cap(body) or RUNAWAY_LIMIT
        piece = 4 * CHARS_PER_TOKEN
        stream = (unit * (piece // len(unit) + 2)) if step.runaway == "repeat" else ""
        sent, n = 0, 0
        self._sse(
            {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}
        )
        while sent < limit:
            if step.runaway == "repeat":
                start = (n * piece) % len(unit)
                content = (stream + stream)[start : start + piece]
            else:
                content = varied_text(piece, offset=n * piece)
            n += 1
            sent += 4
            if step.chunk_delay:
                self._wait(step.chunk_delay)
            self._sse(
                {
                    **base,
                    "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": None}],
                }
            )
        self._sse({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]})
        self._chunk(b"data: [DONE]\n\n")
        self._chunk(b"")

    def _usage(self, body: dict[str, Any], text: str, step: Step) -> dict[str, int]:
        prompt = prompt_tokens(body)
        completion = (
            len(text) + sum(len(json.dumps(c.arguments)) for c in step.tool_calls)
        ) // 4 + 1
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }

    def _finish_reason(self, step: Step) -> str:
        return step.finish_reason or ("tool_calls" if step.tool_calls else "stop")

    def _whole(self, step: Step, body: dict[str, Any], model: str, text: str) -> None:
        message: dict[str, Any] = {"role": "assistant", "content": text or None}
        if step.tool_calls:
            message["tool_calls"] = [
                {
                    "id": c.id or f"call_{i}_{uuid.uuid4().hex[:6]}",
                    "type": "function",
                    "function": {
                        "name": c.name,
                        "arguments": c.arguments
                        if isinstance(c.arguments, str)
                        else json.dumps(c.arguments),
                    },
                }
                for i, c in enumerate(step.tool_calls)
            ]
        self._send_json(
            200,
            {
                "id": f"chatcmpl-{uuid.uuid4().hex[:10]}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": model,
                "choices": [
                    {"index": 0, "message": message, "finish_reason": self._finish_reason(step)}
                ],
                "usage": self._usage(body, text, step),
            },
            step.headers,
        )

    def _stream(self, step: Step, body: dict[str, Any], model: str, text: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        for k, v in step.headers.items():
            self.send_header(k, v)
        self.end_headers()
        base = {
            "id": f"chatcmpl-{uuid.uuid4().hex[:10]}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model,
        }

        sent = [0]

        def delta(d: dict[str, Any], finish: str | None = None) -> None:
            sent[0] += 1
            if step.chunk_delay and sent[0] > 2:  # role chunk and first piece at once, then pauses
                self._wait(step.chunk_delay)
            if step.hold_until and sent[0] == 3:
                while not Path(step.hold_until).exists():
                    self._wait(0.05)
            self._sse({**base, "choices": [{"index": 0, "delta": d, "finish_reason": finish}]})

        delta({"role": "assistant", "content": ""})
        for piece in _split(step.reasoning, step.reasoning_chunks) if step.reasoning else []:
            delta({"content": None, "reasoning_content": piece})  # as llama.cpp sends it
        pieces = (
            _split(text, step.chunks)
            if step.huge is None or step.chunks > 1
            else _split(text, -(-len(text) // 16384))
        )
        if step.cut:
            for piece in pieces[:2] if len(pieces) > 1 else [text[: max(1, len(text) // 2)]]:
                delta({"content": piece})
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)  # no terminating chunk: a truncated body
            return
        for piece in pieces:
            delta({"content": piece})
            if step.stream_error:
                self._sse({"error": {"message": step.stream_error, "type": "server_error"}})
                self._chunk(b"")
                return
        if step.stream_error and not pieces:
            self._sse({"error": {"message": step.stream_error, "type": "server_error"}})
            self._chunk(b"")
            return
        for i, call in enumerate(step.tool_calls):
            args = call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments)
            head = {
                "index": i,
                "id": call.id or f"call_{i}_{uuid.uuid4().hex[:6]}",
                "type": "function",
                "function": {"name": call.name, "arguments": ""},
            }
            delta({"tool_calls": [head]})
            for frag in _split(args, 3):
                delta({"tool_calls": [{"index": i, "function": {"arguments": frag}}]})
        delta({}, self._finish_reason(step))
        if step.usage and (body.get("stream_options") or {}).get("include_usage"):
            self._sse({**base, "choices": [], "usage": self._usage(body, text, step)})
        self._chunk(b"data: [DONE]\n\n")
        self._chunk(b"")  # terminating zero-length chunk


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.fakes.fake_model", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--script", help="JSON file: a list of steps or {steps, default_text}")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--default-text", default="done")
    parser.add_argument(
        "--model", action="append", dest="models", help="model id to list (repeatable)"
    )
    parser.add_argument("--api-key", help="require this bearer key")
    parser.add_argument("--record", help="append every request as a JSON line to this file")
    parser.add_argument(
        "--n-ctx", type=int, help="refuse requests over this many tokens (llama.cpp wording)"
    )
    parser.add_argument("--props", action="store_true", help="serve llama.cpp's /props with n_ctx")
    parser.add_argument(
        "--no-stream-tools",
        action="store_true",
        help="empty stream for streamed requests with tools",
    )
    parser.add_argument(
        "--no-tools",
        action="store_true",
        help="400 'does not support tools' for requests with tools",
    )
    args = parser.parse_args(argv)
    steps: list[Any] = []
    default = args.default_text
    if args.script:
        try:
            loaded, file_default = load_script(
                json.loads(Path(args.script).read_text(encoding="utf-8"))
            )
        except (OSError, ValueError) as exc:
            print(f"fake_model: bad script {args.script}: {exc}", file=sys.stderr)
            return 2
        steps, default = list(loaded), file_default if file_default is not None else default
    fake = FakeModel(
        steps,
        default,
        host=args.host,
        port=args.port,
        models=args.models,
        api_key=args.api_key,
        record=args.record,
        n_ctx=args.n_ctx,
        props=args.props,
        stream_tools=not args.no_stream_tools,
        tools=not args.no_tools,
    ).start()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    print(f"READY {fake.url}", flush=True)
    stop.wait()
    fake.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
