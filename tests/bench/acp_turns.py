"""Turns through ACP against the raw HTTP stream of the same fake model ([acp]).

`ndomo acp` is driven over stdio twice, by two clients, each its own agent process:
- at the wire (the judged rows): a client that writes JSON-RPC lines and reads the agent's
  lines, parsing each and doing nothing else (`_Wire`), so the measuring process adds
  almost no work per chunk — what is timed is ndomo's answer as it reaches an editor's pipe;
- through the ACP Python SDK's own client side (`spawn_agent_process`, a
  `ClientSideConnection`, reported): every notification becomes the SDK's pydantic models
  and a handler call in the measuring process before the clock reads it. With the same
  agent and rounds, that client's 50-chunk gap reads 11–15 ms where the wire client's
  reads 5–7 (docs/performance.md, "Stop 43"): the difference is the instrument's.
For each:
- first token: `session/prompt` sent → first `agent_message_chunk`, against a plain httpx
  streamed request → first content chunk, paired round by round (the order alternates),
  each a short answer, one right after the other (turns.py says why: this VM's idle vCPU);
- a 50-chunk turn: `session/prompt` sent → its response, against the raw stream's whole time.

Same targets as the LSP path (tests/bench/turns.py). Every turn's answer is checked: stop
reason end_turn and the streamed text equal to the script's.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Protocol

from tests.bench.common import Result, without_config
from tests.bench.fake_proc import FakeProc, RawStream
from tests.bench.turns import CHUNK_DELAY, CONTEXT, ROUNDS, TEXT50, stream_rows
from tests.trusting import trust


class Agent(Protocol):
    """One `ndomo acp` process as a client drives it."""

    async def new_session(self, cwd: str) -> str: ...

    async def turn(self, sid: str, prompt: str) -> tuple[float, float, str]:
        """(first agent text, whole turn) seconds and the streamed text of one prompt."""
        ...


class _Editor:
    """The SDK's client side: records when each prompt's first text chunk arrives, and its text."""

    def __init__(self) -> None:
        self.sent = 0.0
        self.first: float | None = None
        self.text: list[str] = []

    def start(self) -> None:
        self.sent, self.first, self.text = time.perf_counter(), None, []

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        if getattr(update, "session_update", None) != "agent_message_chunk":
            return
        if self.first is None:
            self.first = time.perf_counter() - self.sent
        self.text.append(getattr(update.content, "text", ""))

    async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the bench's turns ask for nothing")

    def on_connect(self, conn: Any) -> None:
        pass


class _Sdk:
    def __init__(self, conn: Any, editor: _Editor) -> None:
        self.conn, self.editor = conn, editor

    async def new_session(self, cwd: str) -> str:
        return (await self.conn.new_session(cwd=cwd, mcp_servers=[])).session_id

    async def turn(self, sid: str, prompt: str) -> tuple[float, float, str]:
        from acp import text_block

        self.editor.start()
        res = await self.conn.prompt(session_id=sid, prompt=[text_block(prompt)])
        total = time.perf_counter() - self.editor.sent
        if res.stop_reason != "end_turn" or self.editor.first is None:
            raise RuntimeError(
                f"the ACP turn ended {res.stop_reason} with text {self.editor.text!r}"
            )
        return self.editor.first, total, "".join(self.editor.text)


class _Wire:
    """JSON-RPC over the agent's stdio, one line a message (ACP's framing): requests out,
    the agent's lines read and parsed, its text chunks kept; a request from the agent (the
    bench's turns make none) is answered "method not found"."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.next_id = 0
        self.waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.sent = 0.0
        self.first: float | None = None
        self.text: list[str] = []
        self.reading = asyncio.create_task(self._read())

    async def _read(self) -> None:
        assert self.proc.stdout is not None and self.proc.stdin is not None
        while line := await self.proc.stdout.readline():
            msg = json.loads(line)
            if msg.get("method") == "session/update":
                update = msg["params"]["update"]
                if update.get("sessionUpdate") == "agent_message_chunk":
                    if self.first is None:
                        self.first = time.perf_counter() - self.sent
                    self.text.append(update["content"].get("text", ""))
            elif "method" in msg and "id" in msg:
                no = {"code": -32601, "message": f"the bench has no {msg['method']}"}
                out = {"jsonrpc": "2.0", "id": msg["id"], "error": no}
                self.proc.stdin.write(json.dumps(out).encode() + b"\n")
            elif msg.get("id") in self.waiting:
                self.waiting.pop(msg["id"]).set_result(msg)
        for waiter in self.waiting.values():
            waiter.set_exception(RuntimeError("the agent closed its output"))

    async def call(self, method: str, params: dict[str, Any]) -> Any:
        assert self.proc.stdin is not None
        self.next_id += 1
        done = asyncio.get_running_loop().create_future()
        self.waiting[self.next_id] = done
        out = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.proc.stdin.write(json.dumps(out).encode() + b"\n")
        await self.proc.stdin.drain()
        answer = await done
        if "error" in answer:
            raise RuntimeError(f"{method}: {answer['error']}")
        return answer["result"]

    async def new_session(self, cwd: str) -> str:
        return (await self.call("session/new", {"cwd": cwd, "mcpServers": []}))["sessionId"]

    async def turn(self, sid: str, prompt: str) -> tuple[float, float, str]:
        self.sent, self.first, self.text = time.perf_counter(), None, []
        params = {"sessionId": sid, "prompt": [{"type": "text", "text": prompt}]}
        res = await self.call("session/prompt", params)
        total = time.perf_counter() - self.sent
        if res.get("stopReason") != "end_turn" or self.first is None:
            raise RuntimeError(f"the ACP turn ended {res} with text {self.text!r}")
        return self.first, total, "".join(self.text)


@contextlib.asynccontextmanager
async def _sdk(env: dict[str, str], root: str) -> AsyncIterator[Agent]:
    from acp import PROTOCOL_VERSION, spawn_agent_process

    editor = _Editor()
    cmd = (sys.executable, "-m", "ndomo", "acp")
    async with spawn_agent_process(lambda _a: editor, *cmd, env=env, cwd=root) as (conn, _p):
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        yield _Sdk(conn, editor)


@contextlib.asynccontextmanager
async def _wire(env: dict[str, str], root: str) -> AsyncIterator[Agent]:
    from acp import PROTOCOL_VERSION

    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "ndomo", "acp",
        env=env, cwd=root, limit=2**24,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    wire = _Wire(proc)
    try:
        await wire.call("initialize", {"protocolVersion": PROTOCOL_VERSION})
        yield wire
    finally:
        assert proc.stdin is not None
        proc.stdin.close()  # ACP's end: the client closes the agent's input
        try:
            await asyncio.wait_for(proc.wait(), 10)
        except TimeoutError:
            proc.kill()
            await proc.wait()
        wire.reading.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await wire.reading


async def _pairs(
    agent: Agent, root: str, fake: FakeProc, raw: RawStream, rounds: int
) -> tuple[list[tuple[float, float]], list[tuple[float, float]]]:
    """(first-token pairs, whole-turn pairs), ndomo's and raw's seconds."""
    step = {"text": TEXT50, "chunks": 50, "chunk_delay": CHUNK_DELAY}
    quick = {"text": "a short answer of a few words", "chunks": 5}
    sid = await agent.new_session(root)
    fake.push(quick)  # warm-up: imports, agents, the model client
    await agent.turn(sid, "warm up")
    own = fake.last_chat_body()  # the floor sends ndomo's own request
    fake.push(quick)
    await raw.once(body=own)

    async def pair(i: int, answer: dict) -> dict[str, tuple[float, float]]:
        # a new session each pair (not timed): one session's history would pass the fake's
        # 4,096-token window, and the fit notice is agent text in ACP
        sid = await agent.new_session(root)
        got = {}
        for who in ("raw", "ndomo") if i % 2 == 0 else ("ndomo", "raw"):
            fake.push(answer)
            if who == "raw":
                f, w, text = await raw.once(body=own)
            else:
                f, w, text = await agent.turn(sid, f"round {i}")
            if text != answer["text"]:
                raise RuntimeError(f"{who} streamed {text[:80]!r}, not the script's")
            got[who] = (f, w)
        return got

    firsts = []
    for i in range(rounds):
        got = await pair(i, quick)
        firsts.append((got["ndomo"][0], got["raw"][0]))
    wholes = []
    for i in range(rounds):
        got = await pair(i, step)
        wholes.append((got["ndomo"][1], got["raw"][1]))
    return firsts, wholes


async def run(rounds: int = ROUNDS) -> list[Result]:
    rows: list[Result] = []
    with tempfile.TemporaryDirectory() as d, FakeProc(args=CONTEXT) as fake:
        raw = RawStream(fake.url)
        # a trusted folder, as an editor's project is: an untrusted one's every new session
        # opens with the trust notice as agent text (the user's data in the temp folder)
        ws, data = Path(d, "ws"), Path(d, "data")
        ws.mkdir()
        trust(ws, data_home=data)
        root = str(ws.resolve())
        env = without_config()
        env["NDOMO_BASE_URL"] = fake.url
        env["XDG_DATA_HOME"], env["XDG_CONFIG_HOME"] = str(data), str(Path(d, "config"))
        try:
            async with _wire(env, root) as agent:
                rows += stream_rows(
                    "acp", " through ACP", *await _pairs(agent, root, fake, raw, rounds)
                )
            async with _sdk(env, root) as agent:
                sdk = stream_rows("acp", "", *await _pairs(agent, root, fake, raw, rounds))
        finally:
            await raw.aclose()
    for row in sdk:  # the same measures, reported: the SDK's client side is the editor's work
        case = row.case.replace("p50", "through the ACP SDK's client side p50", 1)
        case = case.replace("turn (", "turn through the ACP SDK's client side (", 1)
        rows.append(
            dataclasses.replace(
                row, case=case, target=f"report (judged at the wire: {row.target})", met=True
            )
        )
    return rows
