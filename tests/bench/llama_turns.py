"""A real llama.cpp `llama-server` (issue 31): spawn → first text of `ndomo run`, and a
running `ndomo serve`'s turn → first text, each against a raw request carrying ndomo's own
body, with the server's prefix cache warm and cold. Reported, not judged.

One server for the whole bench, started by tests/llama's harness with the tests' flags
(SmolLM2-135M-Instruct, its own chat template, `-c 2048 -np 1 -t 2 --jinja --seed 1`) and
`--cache-ram 0`: this llama.cpp keeps evicted prompts in a host-memory cache (8 GiB by
default) and restores one whose prefix matches, so a prompt sent once is never cold again.
Without it, one slot holds the only cache, and:

- **warm**: ndomo's own body is sent (`max_tokens` 1) just before the timed request, so the
  slot holds its whole prompt;
- **cold**: a request with another system text is sent just before, so the slot holds
  another prompt and the timed one shares only the template's first tokens with it.

Every request's prompt tokens evaluated are read from the server's log ("prompt eval time
= T ms / N tokens") and checked: warm evaluates a handful, cold nearly the whole prompt; T,
the server's own prompt time, is kept in the rows for both sides.

ndomo's bodies are captured through the harness's recording relay (two runs each, which
must be equal: the body does not change from run to run), then every timed request goes to
the server directly. `ndomo run`: one warm-up run first stores the server's capabilities in
the workspace (the timed runs send no probes) and ndomo's sources are compiled, as in the
`run` bench; its side is a spawned `ndomo run --new --json` (a new session each run, so
every body is the same) → the first byte of its answer on stdout, the baseline a spawned
`curl` → its first SSE line with text. The LSP side is `ndomo.turn` sent → the first `text`
event (each turn in a new session, so every body is the same), the baseline `RawStream`
(httpx, in process, connection kept) → its first content chunk. ROUNDS pairs per row, the
order alternating; medians; and the same pairs less each request's server prompt time
(what each side adds around the model's work: the load moves it far less than the prompt,
which took 2.8–12 s cold within one loaded run). Answers are capped at 16 tokens
(`model.max_output_tokens` in the user's config; ndomo's XDG config, data and cache homes
are throw-away folders) and each must be non-empty text.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from lsprotocol import types

from tests.bench.common import Result, env_for_server, resident_up, stop_resident
from tests.bench.fake_proc import RawStream
from tests.bench.lsp_client import NDOMO, start, stop
from tests.bench.turns import Turns
from tests.llama import harness

ROUNDS = {"warm": 5, "cold": 5}  # pairs (a cold prompt takes seconds on 2 cores)
CTX = 2048  # as tests/llama/test_llama_server.py serves it
ALIAS = "smollm2"
CACHE = ("--cache-ram", "0")  # no host-memory prompt cache: the slot is the only cache
MAX_TOKENS = 16  # model.max_output_tokens' least value
PROMPT = "say hi"
EVAL = re.compile(r"prompt eval time = +([\d.]+) ms / +(\d+) tokens")
WARM_MAX, COLD_MIN = 8, 0.9  # tokens evaluated when warm; share of the prompt when cold


class Server:
    """The harness's llama-server, with what the bench sends besides the timed requests."""

    def __init__(self, root: Path) -> None:
        self.llama = harness.LlamaServer(
            root / "llama-server.log", ctx=CTX, alias=ALIAS, extra=CACHE
        )
        self.flushes = 0

    @property
    def v1(self) -> str:
        return f"{self.llama.url}/v1"

    def evaluated(self) -> list[tuple[int, float]]:
        """(prompt tokens evaluated, milliseconds it took) of each finished request, in
        order (the server's log)."""
        log = self.llama.log_path.read_text(errors="replace")
        return [(int(n), float(ms)) for ms, n in EVAL.findall(log)]

    def next_eval(self, before: int) -> tuple[int, float]:
        """(tokens, ms) of the prompt of the one request finished after `before` were."""
        deadline = time.monotonic() + 10
        while (done := self.evaluated())[before:] == [] and time.monotonic() < deadline:
            time.sleep(0.01)  # the server logs a request's timings as it releases its slot
        if len(done) != before + 1:
            raise RuntimeError(f"{len(done) - before} requests finished, not 1")
        return done[-1]

    def complete(self, body: dict[str, Any]) -> int:
        """`body` answered with one token, unstreamed (its prompt is then the slot's): its
        prompt tokens, once the server has logged the request."""
        one = {k: v for k, v in body.items() if k != "stream_options"}
        one |= {"stream": False, "max_tokens": 1}
        req = urllib.request.Request(
            f"{self.v1}/chat/completions",
            data=json.dumps(one).encode(),
            headers={"content-type": "application/json"},
        )
        before = len(self.evaluated())
        with urllib.request.urlopen(req, timeout=60) as resp:  # noqa: S310 - the local server
            answer = json.loads(resp.read())
        self.next_eval(before)  # the next request's log line is then its own
        return int(answer["usage"]["prompt_tokens"])

    def prepare(self, kind: str, body: dict[str, Any]) -> None:
        if kind == "warm":
            self.complete(body)
            return
        self.flushes += 1
        self.complete(
            {
                "model": ALIAS,
                "messages": [
                    {"role": "system", "content": f"Flush {self.flushes}: another conversation."},
                    {"role": "user", "content": "ok"},
                ],
            }
        )


def _spawn(cmd: list[str], env: dict[str, str], cwd: str) -> tuple[bytes, list[tuple[float, int]]]:
    """A process's whole stdout, and when each part of it arrived: (seconds since the
    spawn, bytes read so far)."""
    marks: list[tuple[float, int]] = []
    out = bytearray()
    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err, env=env, cwd=cwd
        )
        watchdog = threading.Timer(120, proc.kill)  # a hung process fails the bench, not hangs it
        watchdog.start()
        try:
            assert proc.stdout is not None
            while chunk := os.read(proc.stdout.fileno(), 65536):
                out += chunk
                marks.append((time.perf_counter() - t0, len(out)))
            proc.stdout.close()
            code = proc.wait(10)
        finally:
            watchdog.cancel()
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        if code not in (0, 4):  # done, or capped at MAX_TOKENS
            err.seek(0)
            raise RuntimeError(f"{cmd[0]} exited {code}: {err.read().decode()[-600:]}")
    return bytes(out), marks


def _arrival(marks: list[tuple[float, int]], offset: int) -> float:
    """When the byte at `offset` of stdout had been read."""
    return next(t for t, size in marks if size > offset)


def _run_first_text(out: bytes, marks: list[tuple[float, int]]) -> tuple[float, str]:
    """`ndomo run --json`: when its answer's first character was on stdout, and the answer."""
    text = out.decode()
    at = text.rfind("\n{\n")
    answer = json.loads(text[at + 1 :])["answer"].strip()
    pos = text.find(answer) if answer else -1
    if pos < 0 or pos > at:
        raise RuntimeError(f"ndomo run printed no answer: {text[-400:]!r}")
    return _arrival(marks, len(text[:pos].encode())), answer


def _curl_first_text(out: bytes, marks: list[tuple[float, int]]) -> tuple[float, str]:
    """curl's SSE stream: when its first line with text was whole, and the text joined."""
    first, pieces, offset = None, [], 0
    for line in out.splitlines(keepends=True):
        offset += len(line)
        data = line.decode().strip()
        if not data.startswith("data: ") or data == "data: [DONE]":
            continue
        for choice in json.loads(data[6:]).get("choices") or []:
            piece = (choice.get("delta") or {}).get("content")
            if piece:
                if first is None:
                    first = _arrival(marks, offset - 1)
                pieces.append(piece)
    answer = "".join(pieces).strip()
    if first is None or not answer:
        raise RuntimeError(f"curl's stream carried no text: {out[-400:]!r}")
    return first, answer


def _check(kind: str, evaluated: int, prompt: int, who: str) -> None:
    """The cache was as the row says: warm evaluates a handful of tokens, cold the prompt."""
    ok = evaluated <= WARM_MAX if kind == "warm" else evaluated >= COLD_MIN * prompt
    if not ok:
        raise RuntimeError(f"{who} {kind}: the server evaluated {evaluated} of {prompt} tokens")


async def _turn(client: Any, rec: Turns, session: str) -> tuple[float, str]:
    """`ndomo.turn` in a new session: seconds to its first text event, and its answer."""
    before = set(rec.first)
    rec.sent = time.perf_counter()
    res = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command="ndomo.turn", arguments=[{"prompt": PROMPT, "session": session}]
        )
    )
    status = res.get("status") if isinstance(res, dict) else getattr(res, "status", None)
    if status not in ("done", "capped"):
        raise RuntimeError(f"turn did not finish: {str(res)[:300]}")
    new = [t for t in rec.first if t not in before]
    answer = "".join(rec.text[new[0]]).strip() if len(new) == 1 else ""
    if not answer:
        raise RuntimeError(f"the turn streamed no text: {str(res)[:300]}")
    return rec.first[new[0]], answer


def _equal_bodies(recorder: harness.Recorder, what: str) -> dict[str, Any]:
    chats = recorder.chats()
    bodies = [c.body for c in chats]
    if len(bodies) != 2 or not isinstance(bodies[0], dict) or bodies[0] != bodies[1]:
        raise RuntimeError(f"{what}: {len(bodies)} chat requests, not 2 equal ones")
    if any(c.status != 200 or not c.text.strip() for c in chats):
        raise RuntimeError(f"{what}: the server answered {chats[-1].status} {chats[-1].text!r}")
    recorder.clear()
    return bodies[0]


def _rows(through: str, baseline: str, side: Side, about: dict[str, Any]) -> list[Result]:
    """Per cache state: first text against the raw side's, and the same pairs less the
    server's own prompt time of each request — what each side adds around the model's
    work, which the machine's load moves much less (a shared core can make the same cold
    prompt take 3 s or 12 s)."""
    rows, outside = [], []
    target = f"report (raw: {baseline}; {about['model']}, {about['threads']} threads)"
    for kind in side.times:  # warm, cold (those measured)
        times = {who: [t * 1000 for t in side.times[kind][who]] for who in ("ndomo", "raw")}
        server = {
            who: [ms for w, (_, ms) in side.evaluated[kind] if w == who] for who in ("ndomo", "raw")
        }
        less = {
            who: [t - ms for t, ms in zip(times[who], server[who], strict=True)] for who in times
        }
        n = len(times["ndomo"])
        rows.append(
            Result(
                "llama",
                f"{through}, prefix {kind} (median of {n} pairs)",
                statistics.median(times["ndomo"]),
                statistics.median(times["raw"]),
                "ms",
                target,
                True,
                about
                | {
                    "prompt_tokens": side.prompt,
                    "evaluated_tokens": sorted({n for _, (n, _ms) in side.evaluated[kind]}),
                    "server_prompt_ms": {w: [round(x, 1) for x in v] for w, v in server.items()},
                    "ndomo_ms": [round(x, 1) for x in times["ndomo"]],
                    "raw_ms": [round(x, 1) for x in times["raw"]],
                },
            )
        )
        outside.append(
            Result(
                "llama",
                f"{through} − server's prompt eval, {kind} (median of {n} pairs)",
                statistics.median(less["ndomo"]),
                statistics.median(less["raw"]),
                "ms",
                target,
                True,
                {
                    "ndomo_ms": [round(x, 1) for x in less["ndomo"]],
                    "raw_ms": [round(x, 1) for x in less["raw"]],
                },
            )
        )
    return rows + outside


class Side:
    """One front end's pairs: first-text seconds and prompt tokens evaluated, by cache state."""

    def __init__(self, server: Server, body: dict[str, Any], what: str) -> None:
        self.server, self.body, self.what = server, body, what
        self.prompt = server.complete(body)
        self.times: dict[str, dict[str, list[float]]] = {}
        self.evaluated: dict[str, list[tuple[str, tuple[int, float]]]] = {}

    async def rounds(self, counts: dict[str, int], timed: dict[str, Any]) -> None:
        """`counts[kind]` pairs each; `timed[who](name)`: one timed request → seconds to
        its first text."""
        for kind, n in counts.items():
            self.times[kind] = {"ndomo": [], "raw": []}
            self.evaluated[kind] = []
            for i in range(n):
                for who in ("ndomo", "raw") if i % 2 == 0 else ("raw", "ndomo"):
                    self.server.prepare(kind, self.body)
                    before = len(self.server.evaluated())
                    first = await timed[who](f"{kind}-{i}")
                    evaluated = self.server.next_eval(before)
                    _check(kind, evaluated[0], self.prompt, f"{self.what} ({who})")
                    self.evaluated[kind].append((who, evaluated))
                    self.times[kind][who].append(first)


async def _bench(
    server: Server, root: Path, run_ws: Path, lsp_ws: Path, rounds: dict[str, int]
) -> list[Result]:
    about = {
        "model": harness.MODEL,
        "threads": server.llama.threads,
        "ctx": CTX,
        "llama_cpp": server.llama.props().get("build_info"),
        "cache": "--cache-ram 0; warm: ndomo's body sent just before; cold: another prompt",
        "max_tokens": MAX_TOKENS,
    }

    def extra(base: str) -> dict[str, str]:
        return {
            "NDOMO_BASE_URL": base,
            "NDOMO_MODEL": ALIAS,
            "XDG_CONFIG_HOME": str(root / "config"),
            "XDG_DATA_HOME": str(root / "data"),
            "XDG_CACHE_HOME": str(root / "cache"),
        }

    # --new: a fresh session each run (by default a run continues the latest, with its history)
    ndomo = [sys.executable, "-m", "ndomo", "run", "--new", "--json", "-w", str(run_ws), PROMPT]
    recorder = harness.Recorder(server.llama.url)
    try:  # ndomo's bodies, as the relay recorded them
        for _ in range(2):
            _spawn(ndomo, env_for_server(extra(f"{recorder.url}/v1")), str(run_ws))
        run_body = _equal_bodies(recorder, "ndomo run")
        rec = Turns()
        client, _ = await start(
            NDOMO, lsp_ws, extra(f"{recorder.url}/v1"), handlers={"ndomo/turn/event": rec.on_event}
        )
        try:
            for i in range(2):
                await _turn(client, rec, f"capture-{i}")
        finally:
            await stop(client)
        lsp_body = _equal_bodies(recorder, "ndomo serve")
    finally:
        recorder.close()

    body_file = root / "body.json"
    body_file.write_text(json.dumps(run_body))
    curl = [
        "curl", "-sSN", "--fail", "-H", "content-type: application/json",
        "--data-binary", f"@{body_file}", f"{server.v1}/chat/completions",
    ]  # fmt: skip
    env = env_for_server(extra(server.v1))
    _spawn(ndomo, env, str(run_ws))  # warm-up: capabilities stored for this URL

    async def run_ndomo(_: str) -> float:
        return _run_first_text(*_spawn(ndomo, env, str(run_ws)))[0]

    async def run_curl(_: str) -> float:
        return _curl_first_text(*_spawn(curl, env, str(run_ws)))[0]

    cli = Side(server, run_body, "ndomo run")
    await cli.rounds(rounds, {"ndomo": run_ndomo, "raw": run_curl})

    # The same command handed to the resident process, as a user's later runs are (prefix
    # warm only: a cold prefix is the server's prompt time, the same for both).
    handed_env = {**env, "NDOMO_RESIDENT": "1", "NDOMO_RESIDENT_DIR": str(root / "resident")}
    _spawn(ndomo, handed_env, str(run_ws))  # in-process: it starts the resident
    resident = resident_up(root / "resident")
    try:

        async def run_handed(_: str) -> float:
            return _run_first_text(*_spawn(ndomo, handed_env, str(run_ws)))[0]

        handed = Side(server, run_body, "ndomo run, handed over")
        await handed.rounds({"warm": rounds["warm"]}, {"ndomo": run_handed, "raw": run_curl})
    finally:
        stop_resident(resident, handed_env)

    raw = RawStream(server.v1)
    try:
        rec = Turns()
        client, _ = await start(
            NDOMO, lsp_ws, extra(server.v1), handlers={"ndomo/turn/event": rec.on_event}
        )
        try:
            await _turn(client, rec, "warm-up")  # imports, agents, the model client, capabilities

            async def turn(session: str) -> float:
                return (await _turn(client, rec, session))[0]

            async def stream(_: str) -> float:
                first, _total, text = await raw.once(body=lsp_body)
                if not text.strip():
                    raise RuntimeError("the raw stream carried no text")
                return first

            lsp = Side(server, lsp_body, "ndomo serve")
            await lsp.rounds(rounds, {"ndomo": turn, "raw": stream})
        finally:
            await stop(client)
    finally:
        await raw.aclose()
    return (
        _rows("`ndomo run` spawn → first text", "curl with ndomo's body", cli, about)
        + _rows(
            "`ndomo run` spawn → first text, handed to the resident",
            "curl with ndomo's body",
            handed,
            about,
        )
        + _rows("LSP `ndomo.turn` → first text", "httpx stream of ndomo's body", lsp, about)
    )


async def run(rounds: dict[str, int] | None = None) -> list[Result]:
    from tests.bench.startup import compile_ndomo

    why = harness.missing()
    if why is not None:
        raise RuntimeError(f"{why}: run {harness.INSTALL}")
    compile_ndomo()  # bytecode next to the sources, as an installed package has it
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        config = root / "config" / "ndomo"
        config.mkdir(parents=True)
        settings = {"model": {"temperature": 0, "max_output_tokens": MAX_TOKENS}}
        (config / "config.yaml").write_text(json.dumps(settings))
        run_ws, lsp_ws = root / "run", root / "lsp"
        run_ws.mkdir()
        lsp_ws.mkdir()
        server = Server(root)
        server.llama.start()
        try:
            return await _bench(server, root, run_ws, lsp_ws, rounds or ROUNDS)
        finally:
            server.llama.stop()
