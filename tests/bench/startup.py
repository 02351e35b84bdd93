"""Start-up: spawn → initialize result, and spawn → first useful answer, for ndomo and two
Python language servers started the same way, paired round by round.

The first useful answer: ndomo's `ndomo.mode.get` (App-backed: configuration, store,
runtime); pylsp's and jedi-language-server's hover on `os.path.join` in a three-line file.
The first turn (issue 31): ndomo's `ndomo.turn` → its first streamed text
(`ndomo/turn/event`), against the scripted model in its own process, vs the same hovers.
Every server gets the same client capabilities (VS Code's) and `initialized` before the
request. Answers are checked (ndomo reports its modes; a hover has content), so an error
or an empty answer is never timed as an answer.

jedi-language-server and python-lsp-server are benchmark-only: installed with pip into
the running environment when missing (not project dependencies).

Every server starts from compiled bytecode: pip compiles the others at install, and ndomo's
sources (an editable install) are compiled here first — with PYTHONDONTWRITEBYTECODE set
(as in this project's sandboxes) ndomo would otherwise compile every module from source at
each spawn (~0.3 s on 2 busy cores) and the comparison would measure the compiler.
"""

from __future__ import annotations

import asyncio
import compileall
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pygls.uris import from_fs_path
from pytest_lsp import client_capabilities

from tests.bench.common import Result, env_for_server
from tests.bench.lsp_client import NDOMO

ROUNDS = 15
OTHERS = {
    "python-lsp-server": ("pylsp", "python-lsp-server"),
    "jedi-language-server": ("jedi-language-server", "jedi-language-server"),
}
SOURCE = "import os\n\nos.path.join('a', 'b')\n"


def _exe(name: str) -> str | None:
    bindir = Path(sys.executable).parent
    return str(bindir / name) if (bindir / name).exists() else shutil.which(name)


def others() -> dict[str, list[str]]:
    """The comparison servers, pip-installed into this environment when missing."""
    found = {}
    missing = [pkg for exe, pkg in OTHERS.values() if _exe(exe) is None]
    if missing:
        print(f"startup: installing {' '.join(missing)} for the comparison", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", *missing], check=False)
    for name, (exe, _) in OTHERS.items():
        path = _exe(exe)
        if path:
            found[name] = [path]
    return found


def frame(obj: dict) -> bytes:
    body = json.dumps(obj).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


async def read_message(out: asyncio.StreamReader) -> dict:
    length = 0
    while True:
        line = await out.readline()
        if not line:
            raise RuntimeError("server closed its output before answering")
        if line in (b"\r\n", b"\n"):
            break
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return json.loads(await out.readexactly(length))


CAPS = None


def _caps() -> dict:
    global CAPS
    if CAPS is None:
        from lsprotocol import converters

        CAPS = converters.get_converter().unstructure(client_capabilities("visual-studio-code"))
    return CAPS


def _first_text(msg: dict) -> bool:
    params = msg.get("params") or {}
    return msg.get("method") == "ndomo/turn/event" and params.get("kind") == "text"


async def _answer(proc, want_id: int, until=None) -> dict:
    """Read until the response to `want_id` (or a message `until` accepts); answer the
    server's own requests on the way."""
    while True:
        msg = await asyncio.wait_for(read_message(proc.stdout), 60)
        if until is not None and until(msg):
            return msg
        if msg.get("id") == want_id and ("result" in msg or "error" in msg):
            return msg
        if "method" in msg and "id" in msg:  # a server→client request (configuration, progress …)
            result = (
                [None] * len(msg.get("params", {}).get("items", []))
                if msg["method"] == "workspace/configuration"
                else None
            )
            proc.stdin.write(frame({"jsonrpc": "2.0", "id": msg["id"], "result": result}))


TURN = "ndomo first turn"  # ndomo, its first answer a model turn's first text


async def once(
    name: str, cmd: list[str], root: Path, env: dict[str, str] | None = None
) -> tuple[float, float]:
    """(spawn → initialize result, spawn → first useful answer), raw JSON-RPC."""
    uri = from_fs_path(str(root))
    doc = from_fs_path(str(root / "main.py"))
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "processId": None,
            "rootUri": uri,
            "capabilities": _caps(),
            "workspaceFolders": [{"uri": uri, "name": root.name}],
        },
    }
    t = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        *cmd,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=None if os.environ.get("BENCH_STDERR") else asyncio.subprocess.DEVNULL,
        env=env_for_server(env),
        cwd=str(root),
    )
    try:
        proc.stdin.write(frame(init))
        msg = await _answer(proc, 1)
        t_init = time.perf_counter() - t
        if "error" in msg:
            raise RuntimeError(f"{name} refused initialize: {msg['error']}")
        proc.stdin.write(frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        if name in ("ndomo", TURN):
            command, args = (
                ("ndomo.mode.get", {}) if name == "ndomo" else ("ndomo.turn", {"prompt": "say hi"})
            )
            proc.stdin.write(
                frame(
                    {
                        "jsonrpc": "2.0",
                        "id": 2,
                        "method": "workspace/executeCommand",
                        "params": {"command": command, "arguments": [args]},
                    }
                )
            )
        else:
            proc.stdin.write(
                frame(
                    {
                        "jsonrpc": "2.0",
                        "method": "textDocument/didOpen",
                        "params": {
                            "textDocument": {
                                "uri": doc,
                                "languageId": "python",
                                "version": 1,
                                "text": SOURCE,
                            }
                        },
                    }
                )
            )
            proc.stdin.write(
                frame(
                    {
                        "jsonrpc": "2.0",
                        "id": 2,
                        "method": "textDocument/hover",
                        "params": {
                            "textDocument": {"uri": doc},
                            "position": {"line": 2, "character": 9},
                        },
                    }
                )
            )
        await proc.stdin.drain()
        msg = await _answer(proc, 2, _first_text if name == TURN else None)
        t_first = time.perf_counter() - t
        check(name, msg)
        if name == TURN:  # the rest of the turn, so the next round starts from a settled store
            done = await _answer(proc, 2)
            if (done.get("result") or {}).get("status") != "done":
                raise RuntimeError(f"the first turn did not finish: {str(done)[:300]}")
        proc.stdin.write(frame({"jsonrpc": "2.0", "id": 3, "method": "shutdown", "params": None}))
        await _answer(proc, 3)  # exit only after shutdown answered, as editors do
        proc.stdin.write(frame({"jsonrpc": "2.0", "method": "exit", "params": None}))
        await proc.stdin.drain()
        # the stream is drained so a server writing at exit never blocks on a full pipe
        await asyncio.wait_for(asyncio.gather(proc.stdout.read(), proc.wait()), 60)
    except Exception:
        if proc.returncode is None:
            proc.kill()
        raise
    finally:
        if proc.returncode is None:
            proc.kill()
        await proc.wait()
    return t_init, t_first


def check(name: str, msg: dict) -> None:
    """An answer with content, not an error: otherwise the round is not a sample."""
    if "error" in msg or (msg.get("result") is None and name != TURN):
        raise RuntimeError(f"{name}: no useful first answer: {str(msg)[:300]}")
    if name == TURN:
        if not _first_text(msg) or not msg["params"].get("text"):
            raise RuntimeError(f"the first turn's first event is not text: {str(msg)[:300]}")
        return
    result = msg["result"]
    if name == "ndomo":
        if not isinstance(result, dict) or {m["name"] for m in result.get("modes", [])} != {
            "discussion",
            "brainstorming",
            "autopilot",
        }:
            raise RuntimeError(f"ndomo.mode.get answered {str(result)[:300]}")
    elif "join" not in json.dumps(result.get("contents")):
        raise RuntimeError(f"{name} hover has no content about os.path.join: {str(result)[:300]}")


def compile_ndomo() -> None:
    """ndomo's modules as bytecode next to their sources, as an installed package has them."""
    import ndomo

    for folder in ndomo.__path__:
        if not compileall.compile_dir(folder, quiet=1):
            raise RuntimeError(f"could not compile ndomo's sources in {folder}")


async def run(rounds: int = ROUNDS) -> list[Result]:
    from tests.bench.fake_proc import FakeProc

    compile_ndomo()
    servers = {"ndomo": NDOMO, TURN: NDOMO, **others()}
    init: dict[str, list[float]] = {n: [] for n in servers}
    first: dict[str, list[float]] = {n: [] for n in servers}
    answer = {"text": "a short answer", "chunks": 3}
    with (
        tempfile.TemporaryDirectory() as d,
        FakeProc(args=("--props", "--n-ctx", "8192")) as fake,
    ):
        root = Path(d)
        (root / "main.py").write_text(SOURCE)
        env = {"NDOMO_BASE_URL": fake.url}

        async def one(name: str, cmd: list[str]) -> tuple[float, float]:
            if name == TURN:
                fake.push(answer)
            return await once(name, cmd, root, env)

        for name, cmd in servers.items():  # warm the OS file cache for everyone's imports alike
            await one(name, cmd)
        for i in range(rounds):  # paired and interleaved: drift in machine load hits all alike
            order = list(servers.items())
            if i % 2:
                order.reverse()
            for name, cmd in order:
                a, b = await one(name, cmd)
                init[name].append(a)
                first[name].append(b)
    results = []
    for name in servers:
        if name in ("ndomo", TURN):
            continue
        for mine_name, what, data, target in (
            ("ndomo", "first useful answer", first, True),
            ("ndomo", "initialize", init, False),
            # issue 31: the first turn's first text within pylsp's first hover
            (TURN, "first turn's first text", first, name == "python-lsp-server"),
        ):
            ratios = [m / o for m, o in zip(data[mine_name], data[name], strict=True)]
            mine, other = (
                statistics.median(data[mine_name]) * 1000,
                statistics.median(data[name]) * 1000,
            )
            ratio = statistics.median(ratios)
            results.append(
                Result(
                    "startup",
                    f"{what}: ndomo vs {name}"
                    + ("'s first hover" if mine_name == TURN else "")
                    + f" (median of {rounds} pairs)",
                    mine,
                    other,
                    "ms",
                    "paired median ratio ≤ 1.0" if target else "report",
                    ratio <= 1.0 if target else True,
                    {
                        "paired_ratio_median": round(ratio, 3),
                        "ndomo_ms": [round(x * 1000, 1) for x in data[mine_name]],
                        f"{name}_ms": [round(x * 1000, 1) for x in data[name]],
                    },
                )
            )
    if len(servers) == 1:
        raise RuntimeError(
            "neither pylsp nor jedi-language-server could be installed: nothing to compare with"
        )
    return results
