"""LSP latency of codeAction and ndomo.mode.get: idle and while a turn streams, against a floor server.

The floor is a minimal pygls server (tests/bench/floor_server.py) answering the same two
requests with constants: what pygls + JSON-RPC over stdio cost on this machine.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.uris import from_fs_path

from tests.bench.common import Result, summary
from tests.bench.lsp_client import FLOOR, NDOMO, start, stop
from tests.fakes.fake_model import FakeModel

N = 400
WARMUP = 40
ERRORS: dict[str, int] = {}
LAST_ERROR: dict[str, str] = {}


async def sample(client, uri: str, n: int) -> dict[str, list[float]]:
    action = types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=2, character=0)),
        context=types.CodeActionContext(diagnostics=[]),
    )
    mode = types.ExecuteCommandParams(command="ndomo.mode.get", arguments=[{}])
    out: dict[str, list[float]] = {"codeAction": [], "ndomo.mode.get": []}
    calls = {"codeAction": lambda: client.text_document_code_action_async(action),
             "ndomo.mode.get": lambda: client.workspace_execute_command_async(mode)}
    for _ in range(n):
        for name, call in calls.items():
            t = time.perf_counter()
            try:
                await call()
            except JsonRpcException as exc:  # still a full round trip; counted and reported
                ERRORS[name] = ERRORS.get(name, 0) + 1
                LAST_ERROR[name] = str(exc)[:200]
            out[name].append(time.perf_counter() - t)
    return out


SETTLE_S = 3.0


async def open_doc(client, root: Path) -> str:
    path = root / "sample.py"
    text = "def add(a, b):\n    return a + b\n\nprint(add(1, 2))\n"
    path.write_text(text)
    uri = from_fs_path(str(path))
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text))
    )
    return uri


async def measure(cmd: list[str], root: Path, env: dict[str, str] | None = None, stream: FakeModel | None = None):
    client, _ = await start(cmd, root, env)
    try:
        uri = await open_doc(client, root)
        # Let start-up settle (ndomo imports the rest of itself in the background after
        # `initialized`): "idle" means a server that is up and doing nothing. Same for the floor.
        await asyncio.sleep(SETTLE_S)
        await sample(client, uri, WARMUP)
        idle = await sample(client, uri, N)
        busy = None
        if stream is not None:
            turn = asyncio.ensure_future(client.workspace_execute_command_async(
                types.ExecuteCommandParams(command="ndomo.turn", arguments=[{"prompt": "stream a long answer"}])))
            for _ in range(400):
                if stream.chat_requests():
                    break
                await asyncio.sleep(0.025)
            await asyncio.sleep(0.3)  # the stream is flowing
            busy = await sample(client, uri, N)
            still_streaming = not turn.done()
            await client.workspace_execute_command_async(types.ExecuteCommandParams(command="ndomo.cancel", arguments=[{}]))
            try:
                await asyncio.wait_for(turn, 10)
            except Exception:
                pass
            busy["_streaming"] = still_streaming  # type: ignore[assignment]
        return idle, busy
    finally:
        await stop(client)


async def run() -> list[Result]:
    ERRORS.clear()
    LAST_ERROR.clear()
    with tempfile.TemporaryDirectory() as d1, tempfile.TemporaryDirectory() as d2:
        floor, _ = await measure(FLOOR, Path(d1))
        # ~4000 deltas, one every 5 ms: a slow model streaming for ~20 s
        with FakeModel(script=[{"text": "token " * 4000, "chunks": 4000, "chunk_delay": 0.005}]) as fake:
            idle, busy = await measure(NDOMO, Path(d2), {"NDOMO_BASE_URL": fake.url}, stream=fake)
    results = []
    for req in ("codeAction", "ndomo.mode.get"):
        f = summary(floor[req])
        for label, data in (("idle", idle), ("while streaming", busy)):
            s = summary(data[req])
            for p in ("p50", "p95", "p99"):
                target = "p95 ≤ 2× floor" if (label != "idle" and p == "p95") else "report"
                met = s[p] <= 2 * f[p] if target != "report" else True
                extra = {"streaming_throughout": busy.get("_streaming") if label != "idle" else None,
                         "error_responses": ERRORS.get(req, 0), "last_error": LAST_ERROR.get(req)}
                results.append(Result("lsp", f"{req} {label} {p}", s[p], f[p], "ms", target, met, extra))
    return results
