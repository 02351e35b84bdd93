"""The server process ends when the editor is done with it: after `exit` (also one sent
right behind `shutdown`), when stdin closes, and when the editor process dies — and it
says nothing alarming on stderr while doing so."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

from tests.e2e import raw_lsp
from tests.e2e.conftest import server_env


def _wait_for_store(workspace) -> None:
    """The store is open (its worker threads are what used to keep the process alive)."""
    db = workspace / ".ndomo" / "ndomo.db"
    deadline = time.monotonic() + raw_lsp.WAIT_S
    while not db.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert db.exists()


def test_exit_right_after_shutdown_ends_the_process_without_a_traceback(client_name, tmp_path):
    proc = raw_lsp.spawn()
    try:
        raw_lsp.initialize(
            proc.stdin, proc.stdout, raw_lsp.initialize_params(client_name, tmp_path, os.getpid())
        )
        _wait_for_store(tmp_path)
        # `exit` does not wait for the answer to `shutdown`: the close is still running.
        proc.stdin.write(raw_lsp.frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}))
        proc.stdin.write(raw_lsp.frame({"jsonrpc": "2.0", "method": "exit"}))
        proc.stdin.flush()
        # stdin stays open: the process must end because of `exit`, not because of EOF.
        rc = proc.wait(raw_lsp.WAIT_S)
        err = proc.stderr.read().decode()
    finally:
        raw_lsp.kill_quietly(proc.pid)
        proc.wait()
        proc.stdin.close()
    assert "Traceback" not in err and "CancelledError" not in err, err
    assert rc == 0, err


def test_closing_stdin_ends_the_process(client_name, tmp_path):
    proc = raw_lsp.spawn()
    try:
        raw_lsp.initialize(
            proc.stdin, proc.stdout, raw_lsp.initialize_params(client_name, tmp_path, os.getpid())
        )
        _wait_for_store(tmp_path)
        proc.stdin.close()  # the editor went away without shutdown / exit
        proc.wait(raw_lsp.WAIT_S)
        err = proc.stderr.read().decode()
    finally:
        raw_lsp.kill_quietly(proc.pid)
        proc.wait()
    assert "Traceback" not in err, err


PARENT = textwrap.dedent("""
    import json, os, subprocess, sys
    sys.path.insert(0, sys.argv[3])
    from tests.e2e import raw_lsp
    read_fd = int(sys.argv[1])
    params = json.loads(sys.argv[2])
    params["processId"] = os.getpid()
    server = subprocess.Popen(raw_lsp.SERVE, stdin=read_fd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              pass_fds=())
    os.close(read_fd)
    write = os.fdopen(int(sys.argv[4]), "wb")
    raw_lsp.initialize(write, server.stdout, params)
    print(server.pid, flush=True)
    sys.stdin.read()  # wait to be killed
""")


def test_server_exits_when_the_editor_is_killed(client_name, tmp_path):
    """The editor (a parent process that spawned the server and gave its own pid as
    `processId`) dies by SIGKILL. The test keeps the server's stdin open, so only watching
    the editor's process can end it."""
    from pathlib import Path

    repo = str(Path(__file__).resolve().parents[2])
    read_fd, write_fd = os.pipe()
    params = raw_lsp.initialize_params(client_name, tmp_path, None)
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, str(read_fd), json.dumps(params), repo, str(write_fd)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        pass_fds=(read_fd, write_fd),
        env=server_env(),
    )
    os.close(read_fd)
    server_pid = None
    try:
        line = parent.stdout.readline()
        assert line.strip().isdigit(), f"the parent did not start the server: {line!r}"
        server_pid = int(line)
        _wait_for_store(tmp_path)
        assert not raw_lsp.gone(server_pid)
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        # write_fd is still open here: the server's stdin has not reached EOF.
        assert raw_lsp.wait_gone(server_pid), "the server outlived its editor"
    finally:
        if server_pid is not None:
            raw_lsp.kill_quietly(server_pid)
        raw_lsp.kill_quietly(parent.pid)
        parent.wait()
        parent.stdin.close()
        parent.stdout.close()
        os.close(write_fd)


async def test_info_logs_go_to_the_editor_log_not_stderr(lsp, tmp_path):
    import asyncio

    from lsprotocol import types
    from pygls.uris import from_fs_path

    from tests.e2e.conftest import command
    from tests.fakes.fake_model import FakeModel

    ws, other = tmp_path / "ws", tmp_path / "other"
    ws.mkdir()
    other.mkdir()
    with FakeModel(script=[{"text": "hello"}]) as fake:
        client = await lsp.start(
            ws, env={"NDOMO_BASE_URL": fake.url}, init_options={"open_transcript": False}
        )
        summary = await command(
            client, "ndomo.turn", {"prompt": "hi", "agent": "craftsman", "mode": "discussion"}
        )
        assert summary["status"] == "done", summary
        client.workspace_did_change_workspace_folders(
            types.DidChangeWorkspaceFoldersParams(
                event=types.WorkspaceFoldersChangeEvent(
                    added=[types.WorkspaceFolder(uri=from_fs_path(str(other)), name="other")],
                    removed=[],
                )
            )
        )

        def infos() -> list[str]:
            return [m.message for m in client.log_messages if m.type == 3]  # MessageType.Info

        for _ in range(200):  # the folder's store opens off the request path
            if any("workspace folder" in m and "added" in m for m in infos()):
                break
            await asyncio.sleep(0.05)
    assert any("workspace folder" in m and "added" in m for m in infos()), client.log_messages
    # httpx's line for each model request is not among them unless at --log-level debug
    # (tests/e2e/test_first_token.py)
    assert not [m for m in infos() if "HTTP Request" in m], client.log_messages
    assert not [line for line in client.stderr_lines if " INFO " in line or " DEBUG " in line], (
        client.stderr_lines
    )
