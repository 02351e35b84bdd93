"""A bare LSP peer over real pipes, for tests about the server *process*: how it exits
when the editor sends `exit`, closes stdin, or dies. (pytest-lsp owns its process and its
pipes; these tests need to hold or drop them on purpose.)"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

from lsprotocol import converters
from pygls.uris import from_fs_path
from pytest_lsp import client_capabilities

from tests.e2e.conftest import server_env

SERVE = [sys.executable, "-m", "ndomo", "serve"]
WAIT_S = 60.0  # generous: these tests check *that* the process ends, never how fast


def frame(obj: dict) -> bytes:
    body = json.dumps(obj).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def read_message(stream: IO[bytes]) -> dict | None:
    length = None
    while True:
        line = stream.readline()
        if not line:
            return None
        if line in (b"\r\n", b"\n"):
            break
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return json.loads(stream.read(length))


def initialize_params(client_name: str, workspace: Path, process_id: int | None) -> dict[str, Any]:
    caps = converters.get_converter().unstructure(client_capabilities(client_name))
    uri = from_fs_path(str(workspace))
    return {
        "processId": process_id,
        "rootUri": uri,
        "capabilities": caps,
        "workspaceFolders": [{"uri": uri, "name": workspace.name}],
    }


def initialize(write: IO[bytes], read: IO[bytes], params: dict[str, Any]) -> dict:
    """initialize → (wait for the answer) → initialized; returns the initialize result."""
    write.write(frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}))
    write.flush()
    while True:
        msg = read_message(read)
        assert msg is not None, "server closed stdout during initialize"
        if msg.get("id") == 1:
            break
    write.write(frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
    write.flush()
    return msg


def gone(pid: int) -> bool:
    """The process has ended (a zombie nobody reaped counts as ended)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


def wait_gone(pid: int, timeout: float = WAIT_S) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if gone(pid):
            return True
        time.sleep(0.1)
    return gone(pid)


def spawn(**kw: Any) -> subprocess.Popen:
    return subprocess.Popen(
        SERVE,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=server_env(),
        **kw,
    )


def kill_quietly(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, 9)
