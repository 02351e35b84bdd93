"""Start-up: spawn → initialize result, for ndomo and two Python language servers started the same way.

jedi-language-server and python-lsp-server are benchmark-only: `pip install
jedi-language-server python-lsp-server` into the venv to rerun (they are not project deps).
"""

from __future__ import annotations

import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import asyncio
import json

from pygls.uris import from_fs_path

from tests.bench.common import Result, env_for_server
from tests.bench.lsp_client import NDOMO

ROUNDS = 7


def others() -> dict[str, list[str]]:
    found = {}
    bindir = Path(sys.executable).parent
    for name, exe in (("jedi-language-server", "jedi-language-server"), ("python-lsp-server", "pylsp")):
        path = shutil.which(exe) or (str(bindir / exe) if (bindir / exe).exists() else None)
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
            raise RuntimeError("server closed its output before answering initialize")
        if line in (b"\r\n", b"\n"):
            break
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return json.loads(await out.readexactly(length))


async def once(cmd: list[str], root: Path) -> float:
    """Raw JSON-RPC, so no client library's parsing of any server's answer is timed or trips."""
    uri = from_fs_path(str(root))
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "processId": None, "rootUri": uri, "capabilities": {},
        "workspaceFolders": [{"uri": uri, "name": root.name}]}}
    t = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        *cmd, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
        env=env_for_server(), cwd=str(root))
    proc.stdin.write(frame(init))
    await proc.stdin.drain()
    while True:
        msg = await asyncio.wait_for(read_message(proc.stdout), 60)
        if msg.get("id") == 1 and ("result" in msg or "error" in msg):
            break
    elapsed = time.perf_counter() - t
    if "error" in msg:
        raise RuntimeError(f"{cmd[0]} refused initialize: {msg['error']}")
    proc.stdin.write(frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown", "params": None}))
    proc.stdin.write(frame({"jsonrpc": "2.0", "method": "exit", "params": None}))
    try:
        await proc.stdin.drain()
        await asyncio.wait_for(proc.wait(), 5)
    except Exception:
        pass
    if proc.returncode is None:
        proc.kill()
        await proc.wait()
    return elapsed


async def run() -> list[Result]:
    servers = {"ndomo": NDOMO, **others()}
    times: dict[str, list[float]] = {name: [] for name in servers}
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        (root / "main.py").write_text("print('hello')\n")
        await once(NDOMO, root)  # warm the OS file cache for everyone's imports alike
        for name, cmd in servers.items():
            await once(cmd, root)
        for _ in range(ROUNDS):  # interleaved, so drift in machine load hits all alike
            for name, cmd in servers.items():
                times[name].append(await once(cmd, root))
    mine = statistics.median(times["ndomo"]) * 1000
    results = []
    for name in servers:
        if name == "ndomo":
            continue
        other = statistics.median(times[name]) * 1000
        results.append(Result("startup", f"ndomo vs {name} (median of {ROUNDS})", mine, other, "ms",
                              "no slower than either", mine <= other,
                              {"ndomo_all_ms": [round(x * 1000, 1) for x in times["ndomo"]],
                               f"{name}_all_ms": [round(x * 1000, 1) for x in times[name]]}))
    if len(servers) == 1:
        print("startup: jedi-language-server / pylsp not installed; pip install them to compare", file=sys.stderr)
    return results
