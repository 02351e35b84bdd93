"""Sessions that survive: `ndomo run` continues the latest session with its history, a killed
server comes back to the same session, and a change made elsewhere reaches the editor."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import command, server_env
from tests.fakes.fake_model import FakeModel


@pytest.fixture
def fake():
    with FakeModel(default_text="ok") as fm:
        yield fm


def ndomo(ws, *args, fake=None):
    env = server_env({"NDOMO_BASE_URL": fake.url} if fake else None)
    out = subprocess.run(
        [sys.executable, "-m", "ndomo", *args, "--workspace", str(ws)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def run(ws, *args, fake):
    """`ndomo run … --json`: the streamed turn, then the summary as JSON."""
    out = ndomo(ws, "run", "--json", *args, fake=fake)
    return json.loads(out[out.index("\n{") + 1 :] if not out.startswith("{") else out)


def user_texts(request):
    return [m["content"] for m in request["body"]["messages"] if m["role"] == "user"]


def test_ndomo_run_continues_the_latest_session_and_new_starts_fresh(tmp_path, fake):
    fake.push({"text": "I wrote the parser"})
    first = run(tmp_path, "write the parser", fake=fake)
    fake.push({"text": "tests written"})
    second = run(tmp_path, "and now the tests", fake=fake)
    assert second["session"] == first["session"]
    sent = fake.chat_requests()[-1]["body"]["messages"]
    assert [(m["role"], m["content"]) for m in sent[1:]] == [
        ("user", "write the parser"),
        ("assistant", "I wrote the parser"),
        ("user", "and now the tests"),
    ]
    third = run(tmp_path, "--new", "and now the tests", fake=fake)
    assert third["session"] != first["session"]
    assert user_texts(fake.chat_requests()[-1]) == ["and now the tests"]
    # --session picks one; `session open` makes it the latest again, `session export` writes it
    fake.push({"text": "linted"})
    fourth = run(tmp_path, "--session", first["session"], "lint it", fake=fake)
    assert fourth["session"] == first["session"]
    assert user_texts(fake.chat_requests()[-1]) == [
        "write the parser",
        "and now the tests",
        "lint it",
    ]
    view = json.loads(ndomo(tmp_path, "session", "open", "--session", third["session"], "--json"))
    assert [t["prompt"] for t in view["turns"]] == ["and now the tests"]
    assert json.loads(ndomo(tmp_path, "status", "--json"))["session"] == third["session"]
    exported = json.loads(
        ndomo(tmp_path, "session", "export", "--session", first["session"], "--json")
    )
    text = Path(exported["path"]).read_text(encoding="utf-8")
    assert exported["turns"] == 3 and text.index("write the parser") < text.index("lint it")


async def test_a_killed_server_comes_back_to_the_same_session_with_history_and_mode(
    lsp, tmp_path, fake
):
    client = await lsp.start(tmp_path, env={"NDOMO_BASE_URL": fake.url})
    await command(client, "ndomo.mode.set", {"mode": "brainstorming"})
    fake.push({"text": "three options: A, B, C"})
    first = await command(client, "ndomo.turn", {"prompt": "options for caching?"})
    assert first["status"] == "done"
    client._server.kill()  # no shutdown: the process just dies
    await client._server.wait()
    lsp.clients.remove(client)

    again = await lsp.start(tmp_path, env={"NDOMO_BASE_URL": fake.url})
    view = await command(again, "ndomo.session.open", {})
    assert view["session"] == first["session"] and view["status"]["mode"] == "brainstorming"
    (turn,) = view["turns"]
    assert (
        turn["prompt"] == "options for caching?"
        and turn["items"][0]["text"] == "three options: A, B, C"
    )
    fake.push({"text": "B"})
    await command(again, "ndomo.turn", {"prompt": "which one?"})
    assert user_texts(fake.chat_requests()[-1]) == ["options for caching?", "which one?"]


async def test_mode_changed_from_the_cli_reaches_the_editors_status(lsp, tmp_path, fake):
    seen: asyncio.Queue = asyncio.Queue()

    def on_status(params):
        seen.put_nowait(params if isinstance(params, dict) else params._asdict())

    client = await lsp.start(
        tmp_path, env={"NDOMO_BASE_URL": fake.url}, handlers={"ndomo/status": on_status}
    )
    status = await command(client, "ndomo.status", {})
    assert status["mode"] == "discussion"
    await asyncio.to_thread(ndomo, tmp_path, "mode", "set", "--mode", "autopilot")
    while True:  # the editor hears it through the store's change notification (no timing assumed)
        s = await seen.get()
        if s["mode"] == "autopilot":
            break
    assert s["session"] == status["session"]


async def test_a_second_process_is_refused_while_the_sessions_turn_runs(lsp, tmp_path):
    with FakeModel(script=[{"text": "slow answer", "delay": 60}]) as slow:
        client = await lsp.start(tmp_path, env={"NDOMO_BASE_URL": slow.url})
        started = asyncio.get_running_loop().create_future()

        def on_event(params):
            kind = params["kind"] if isinstance(params, dict) else params.kind
            if kind == "turn_started" and not started.done():
                started.set_result(True)

        client.feature("ndomo/turn/event")(on_event)
        turn = asyncio.ensure_future(command(client, "ndomo.turn", {"prompt": "think long"}))
        await started  # the editor's turn holds the session now
        while not slow.chat_requests():  # and its model request is out (the fake holds it)
            await asyncio.sleep(0.05)
        out = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-m", "ndomo", "run", "--workspace", str(tmp_path), "me too"],
            capture_output=True,
            text=True,
            timeout=120,
            env=server_env({"NDOMO_BASE_URL": slow.url}),
            stdin=subprocess.DEVNULL,
        )
        assert out.returncode == 1
        assert "a turn is already running in session" in out.stderr and "(process " in out.stderr
        assert len(slow.chat_requests()) == 1  # the refused turn never reached the model
        await command(client, "ndomo.cancel", {})
        assert (await turn)["status"] == "cancelled"
        fresh = await asyncio.to_thread(ndomo, tmp_path, "run", "--new", "not refused", fake=slow)
        assert "a turn is already running" not in fresh


def _frame(obj: dict) -> bytes:
    body = json.dumps(obj).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def test_the_server_exits_when_exit_follows_shutdown_at_once(tmp_path):
    """Neovim's `:qa` sends `exit` without waiting for `shutdown` to finish; the store's
    worker threads must not keep the process alive."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "ndomo", "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=tmp_path,
        env=server_env(),
    )
    try:

        def read_until(want_id):
            while True:
                n = 0
                while (line := proc.stdout.readline()) not in (b"\r\n", b"\n", b""):
                    if line.startswith(b"Content-Length:"):
                        n = int(line.split(b":")[1])
                msg = json.loads(proc.stdout.read(n))
                if msg.get("id") == want_id:
                    return msg

        proc.stdin.write(
            _frame(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {}},
                }
            )
        )
        proc.stdin.flush()
        read_until(1)
        proc.stdin.write(_frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        proc.stdin.write(
            _frame(
                {
                    "jsonrpc": "2.0",
                    "id": 2,
                    "method": "workspace/executeCommand",
                    "params": {"command": "ndomo.status", "arguments": [{}]},
                }
            )
        )
        proc.stdin.flush()
        assert read_until(2)["result"]["mode"] == "discussion"  # the store is open
        proc.stdin.write(
            _frame({"jsonrpc": "2.0", "id": 3, "method": "shutdown"})
            + _frame({"jsonrpc": "2.0", "method": "exit"})
        )
        proc.stdin.flush()
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


async def test_an_open_export_is_refreshed_through_the_editors_buffer(lsp, tmp_path, fake):
    from lsprotocol import types

    from tests.e2e.editor_support import EditorDisk

    disk = EditorDisk()
    client = await lsp.start(
        tmp_path,
        env={"NDOMO_BASE_URL": fake.url},
        handlers={types.WORKSPACE_APPLY_EDIT: lambda p: disk.handler(p)},
    )
    fake.push({"text": "first answer"})
    await command(client, "ndomo.turn", {"prompt": "first question"})
    exported = await command(client, "ndomo.session.export", {})
    path = tmp_path / ".ndomo" / "sessions" / f"{exported['session']}.md"
    assert exported["path"] == str(path)
    uri = disk.open(client, path, path.read_text(encoding="utf-8"))  # the user opened the export
    fake.push({"text": "second answer"})
    await command(client, "ndomo.turn", {"prompt": "second question"})
    await command(client, "ndomo.session.export", {})
    assert [r.edit for r in disk.requests if uri in str(r.edit)], "the open buffer was edited"
    assert "second answer" in disk.buffers[uri][1] and "first answer" in disk.buffers[uri][1]
    assert "second answer" in path.read_text(encoding="utf-8")
