"""LSP latency of codeAction and ndomo.mode.get: idle and while a turn streams, against a floor server.

The floor is a minimal pygls server (tests/bench/floor_server.py) answering the same two
requests with constant answers of ndomo's shape: what pygls + JSON-RPC over stdio cost.
Both servers run at once and are sampled interleaved (one ndomo request, one floor
request, …) in the same window, so machine load hits both alike; sampling starts once both
have settled (ndomo's background warm-up done). The fake model streams
from its own process. An error answer is not a sample: the run fails. While streaming,
the turn must still be streaming when the last sample is taken (asserted).
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
import time
from pathlib import Path

from lsprotocol import types
from pygls.uris import from_fs_path

from tests.bench.common import Result, summary
from tests.bench.fake_proc import FakeProc
from tests.bench.idle import settle
from tests.bench.lsp_client import FLOOR, NDOMO, server_pid, start, stop

N = 400
WARMUP = 40
# ~30 s of deltas, one word each; words that never repeat: the same word 6,000 times is a
# loop the turn stops (llm/loops.py), as it would stop a small model's
STREAM = {
    "text": "".join(f"w{i} " for i in range(6000)),
    "chunks": 6000,
    "chunk_delay": 0.005,
}


def _requests(client, uri: str) -> dict:
    action = types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=types.Range(
            start=types.Position(line=0, character=0), end=types.Position(line=2, character=0)
        ),
        context=types.CodeActionContext(diagnostics=[]),
    )
    mode = types.ExecuteCommandParams(command="ndomo.mode.get", arguments=[{}])
    return {
        "codeAction": lambda: client.text_document_code_action_async(action),
        "ndomo.mode.get": lambda: client.workspace_execute_command_async(mode),
    }


def _check(who: str, name: str, got) -> None:
    if name == "codeAction" and not got:
        raise RuntimeError(f"{who}: codeAction answered no actions")
    if name == "ndomo.mode.get":
        modes = got.get("modes") if isinstance(got, dict) else getattr(got, "modes", None)
        if not modes or len(modes) != 3:
            raise RuntimeError(f"{who}: ndomo.mode.get answered {str(got)[:200]}")


async def sample(pairs: dict, n: int) -> dict[str, dict[str, list[float]]]:
    """Interleaved: each round sends every request to each server in turn (order alternating)."""
    out = {who: {"codeAction": [], "ndomo.mode.get": []} for who in pairs}
    order = list(pairs)
    for i in range(n):
        for who in order if i % 2 == 0 else order[::-1]:
            for name, call in pairs[who].items():
                t = time.perf_counter()
                got = await call()  # an error answer raises: never counted as a sample
                out[who][name].append(time.perf_counter() - t)
                _check(who, name, got)  # every answer (outside the timed part)
    return out


async def open_doc(client, root: Path) -> str:
    path = root / "sample.py"
    text = "def add(a, b):\n    return a + b\n\nprint(add(1, 2))\n"
    path.write_text(text)
    uri = from_fs_path(str(path))
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="python", version=1, text=text
            )
        )
    )
    return uri


async def run() -> list[Result]:
    with (
        tempfile.TemporaryDirectory() as d1,
        tempfile.TemporaryDirectory() as d2,
        FakeProc() as fake,
    ):
        floor, _ = await start(FLOOR, Path(d1))
        ndomo, _ = await start(NDOMO, Path(d2), {"NDOMO_BASE_URL": fake.url})
        try:
            pairs = {
                "floor": _requests(floor, await open_doc(floor, Path(d1))),
                "ndomo": _requests(ndomo, await open_doc(ndomo, Path(d2))),
            }
            await ndomo.workspace_execute_command_async(
                types.ExecuteCommandParams(command="ndomo.mode.get", arguments=[{}])
            )
            # Both settled: ndomo's background warm-up after `initialized` (the rest of its
            # imports, agents, the model client) takes seconds on a busy machine and must not
            # land in the idle window. Settled = no thread switched for a while (idle.settle).
            for client in (ndomo, floor):
                await settle(server_pid(client))
            await sample(pairs, WARMUP)
            idle = await sample(pairs, N)
            fake.push(STREAM)
            turn = asyncio.ensure_future(
                ndomo.workspace_execute_command_async(
                    types.ExecuteCommandParams(
                        command="ndomo.turn", arguments=[{"prompt": "stream a long answer"}]
                    )
                )
            )
            await asyncio.sleep(1.0)  # the stream is flowing
            if turn.done():
                raise RuntimeError(f"the streamed turn ended before sampling: {turn.result()}")
            busy = await sample(pairs, N)
            if turn.done():
                raise RuntimeError(
                    "the turn stopped streaming before the last sample (streaming_throughout false)"
                )
            await ndomo.workspace_execute_command_async(
                types.ExecuteCommandParams(command="ndomo.cancel", arguments=[{}])
            )
            with contextlib.suppress(Exception):
                await asyncio.wait_for(turn, 10)
        finally:
            await stop(ndomo)
            await stop(floor)
    results = []
    for req in ("codeAction", "ndomo.mode.get"):
        for label, data in (("idle", idle), ("while streaming", busy)):
            s, f = summary(data["ndomo"][req]), summary(data["floor"][req])
            for p in ("p50", "p95", "p99"):
                target = "p95 ≤ 2× floor" if (label != "idle" and p == "p95") else "report"
                met = s[p] <= 2 * f[p] if target != "report" else True
                extra = {
                    "streaming_throughout": True if label != "idle" else None,
                    "samples": s["n"],
                }
                results.append(
                    Result("lsp", f"{req} {label} {p}", s[p], f[p], "ms", target, met, extra)
                )
    return results
