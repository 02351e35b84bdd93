"""Turns through ACP against the raw HTTP stream of the same fake model ([acp]).

`ndomo acp` is driven over stdio by the ACP Python SDK's own client side
(`spawn_agent_process`, a `ClientSideConnection`), the way an editor drives it:
- first token: `session/prompt` sent → first `agent_message_chunk`, against a plain httpx
  streamed request → first content chunk, paired round by round (the order alternates),
  each a short answer, one right after the other (turns.py says why: this VM's idle vCPU);
- a 50-chunk turn: `session/prompt` sent → its response, against the raw stream's whole time.

Same targets as the LSP path (tests/bench/turns.py). Every turn's answer is checked: stop
reason end_turn and the streamed text equal to the script's.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.bench.common import Result
from tests.bench.fake_proc import FakeProc, RawStream
from tests.bench.turns import CHUNK_DELAY, CONTEXT, ROUNDS, TEXT50, stream_rows
from tests.trusting import trust


class _Editor:
    """The client side: records when each prompt's first text chunk arrives, and its text."""

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


async def _turn(conn: Any, editor: _Editor, sid: str, prompt: str) -> tuple[float, float, str]:
    from acp import text_block

    editor.start()
    res = await conn.prompt(session_id=sid, prompt=[text_block(prompt)])
    total = time.perf_counter() - editor.sent
    if res.stop_reason != "end_turn" or editor.first is None:
        raise RuntimeError(f"the ACP turn ended {res.stop_reason} with text {editor.text!r}")
    return editor.first, total, "".join(editor.text)


async def run(rounds: int = ROUNDS) -> list[Result]:
    from acp import PROTOCOL_VERSION, spawn_agent_process

    editor = _Editor()
    step = {"text": TEXT50, "chunks": 50, "chunk_delay": CHUNK_DELAY}
    quick = {"text": "a short answer of a few words", "chunks": 5}
    with tempfile.TemporaryDirectory() as d, FakeProc(args=CONTEXT) as fake:
        raw = RawStream(fake.url)
        # a trusted folder, as an editor's project is: an untrusted one's every new session
        # opens with the trust notice as agent text (the user's data in the temp folder)
        ws, data = Path(d, "ws"), Path(d, "data")
        ws.mkdir()
        trust(ws, data_home=data)
        root = str(ws.resolve())
        env = {k: v for k, v in os.environ.items() if not k.startswith("NDOMO_")}
        env["NDOMO_BASE_URL"] = fake.url
        env["XDG_DATA_HOME"], env["XDG_CONFIG_HOME"] = str(data), str(Path(d, "config"))
        try:
            async with spawn_agent_process(
                lambda _agent: editor, sys.executable, "-m", "ndomo", "acp", env=env, cwd=root
            ) as (conn, _proc):
                await conn.initialize(protocol_version=PROTOCOL_VERSION)
                sid = (await conn.new_session(cwd=root, mcp_servers=[])).session_id
                fake.push(quick)  # warm-up: imports, agents, the model client
                await _turn(conn, editor, sid, "warm up")
                own = fake.last_chat_body()  # the floor sends ndomo's own request
                fake.push(quick)
                await raw.once(body=own)

                async def pair(i: int, answer: dict) -> dict[str, tuple[float, float]]:
                    # a new session each pair (not timed): one session's history would pass
                    # the fake's 4,096-token window, and the fit notice is agent text in ACP
                    sid = (await conn.new_session(cwd=root, mcp_servers=[])).session_id
                    got = {}
                    for who in ("raw", "ndomo") if i % 2 == 0 else ("ndomo", "raw"):
                        fake.push(answer)
                        if who == "raw":
                            f, w, text = await raw.once(body=own)
                        else:
                            f, w, text = await _turn(conn, editor, sid, f"round {i}")
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
        finally:
            await raw.aclose()
    return list(stream_rows("acp", " through ACP", firsts, wholes))
