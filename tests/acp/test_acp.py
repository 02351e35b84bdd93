"""`ndomo acp` end to end: the real agent process driven over stdio by the official ACP
TypeScript SDK's client (tests/acp/driver.mjs), the scripted model behind it.

The SDK is installed by `.ci/run` (`npm ci --prefix tests/acp`)."""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.bench.common import without_config
from tests.fakes.fake_model import FakeModel
from tests.trusting import trust

HERE = Path(__file__).parent
DRIVER = HERE / "driver.mjs"
SDK = HERE / "node_modules" / "@agentclientprotocol" / "sdk"
WAIT_S = 30.0

pytestmark = pytest.mark.skipif(
    shutil.which("node") is None or not SDK.is_dir(),
    reason="the ACP TypeScript SDK is not installed: npm ci --prefix tests/acp",
)


class Driver:
    """One client process (and through it one `ndomo acp`): commands in, events out."""

    def __init__(self, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            ["node", str(DRIVER), "--", sys.executable, "-m", "ndomo", "acp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            text=True,
        )
        self.events: list[dict[str, Any]] = []
        self._new: queue.Queue[dict[str, Any]] = queue.Queue()
        self._ids = 0
        threading.Thread(target=self._read, daemon=True).start()
        self.agent_pid = self.wait(lambda e: e["type"] == "agent_pid")["pid"]

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._new.put(json.loads(line))
        self._new.put({"type": "driver_exit"})

    def _send(self, cmd: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()

    def wait(
        self, pred: Callable[[dict[str, Any]], bool], timeout: float = WAIT_S
    ) -> dict[str, Any]:
        for e in self.events:
            if pred(e) and not e.get("_seen"):
                e["_seen"] = True
                return e
        end = time.monotonic() + timeout
        while True:
            try:
                e = self._new.get(timeout=max(0.0, end - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no such event in {timeout}s; got {self.events}") from None
            self.events.append(e)
            if e["type"] == "driver_exit" and not pred(e):
                raise AssertionError(f"the client exited; events: {self.events}")
            if pred(e):
                e["_seen"] = True
                return e

    def start(self, method: str, params: dict[str, Any]) -> int:
        self._ids += 1
        self._send({"op": "request", "id": self._ids, "method": method, "params": params})
        return self._ids

    def answer(self, rid: int) -> dict[str, Any]:
        return self.wait(lambda e: e["type"] in ("response", "error") and e.get("id") == rid)

    def request(self, method: str, params: dict[str, Any]) -> Any:
        got = self.answer(self.start(method, params))
        assert got["type"] == "response", got
        return got["result"]

    def error(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        got = self.answer(self.start(method, params))
        assert got["type"] == "error", got
        return got["error"]

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self._send({"op": "notify", "method": method, "params": params})

    def permissions(self, *answers: str) -> None:
        self._send({"op": "permissions", "answers": list(answers)})

    def buffer(self, path: Path, text: str) -> None:
        self._send({"op": "buffer", "path": str(path), "text": text})

    def updates(self, kind: str) -> list[dict[str, Any]]:
        return [
            e["params"]["update"]
            for e in self.events
            if e["type"] == "update" and e["params"]["update"]["sessionUpdate"] == kind
        ]

    def initialize(self, fs: bool = True) -> dict[str, Any]:
        caps = {"fs": {"readTextFile": fs, "writeTextFile": fs}}
        return self.request("initialize", {"protocolVersion": 1, "clientCapabilities": caps})

    def close(self) -> None:
        if self.proc.poll() is None:
            with _suppress():
                self._send({"op": "exit"})
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        _gone(self.agent_pid)


class _suppress:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return True


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is gone for our purpose (its parent, the driver, may not have reaped it yet)
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def _gone(pid: int, timeout: float = 15.0) -> None:
    end = time.monotonic() + timeout
    while _alive(pid):
        if time.monotonic() > end:
            os.kill(pid, signal.SIGKILL)
            raise AssertionError(f"ndomo acp (pid {pid}) outlived its client")
        time.sleep(0.05)


@pytest.fixture
def env(tmp_path):
    def make(fake: FakeModel) -> dict[str, str]:
        e = without_config()
        e["NDOMO_BASE_URL"] = fake.url
        return e

    return make


@pytest.fixture
def drivers():
    started: list[Driver] = []

    def start(env: dict[str, str]) -> Driver:
        d = Driver(env)
        started.append(d)
        return d

    yield start
    for d in started:
        d.close()


def _workspace(tmp_path: Path, trusted: bool = True) -> Path:
    root = tmp_path / "ws"
    (root / ".git").mkdir(parents=True)
    if trusted:
        trust(root)
    return root


def _text(updates: list[dict[str, Any]]) -> str:
    return "".join(u["content"]["text"] for u in updates)


def _session(d: Driver, root: Path, agent: str = "craftsman", mode: str = "autopilot") -> str:
    sid = d.request("session/new", {"cwd": str(root), "mcpServers": []})["sessionId"]
    d.request("session/set_config_option", {"sessionId": sid, "configId": "agent", "value": agent})
    d.request("session/set_mode", {"sessionId": sid, "modeId": mode})
    return sid


def _prompt(d: Driver, sid: str, *blocks: dict[str, Any]) -> dict[str, Any]:
    return d.request("session/prompt", {"sessionId": sid, "prompt": list(blocks)})


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


@pytest.mark.parametrize("client_fs", [True, False], ids=["client-fs", "ndomo-writes"])
def test_an_edit_is_a_diff_applied_through_the_clients_file_system(
    tmp_path, env, drivers, client_fs
):
    root = _workspace(tmp_path)
    (root / "a.py").write_text("x = 1\n")
    edit = {"name": "edit", "arguments": {"path": "a.py", "old_text": "x = 1", "new_text": "x = 2"}}
    with FakeModel(script=[{"tool_calls": [edit]}, {"text": "edited it"}]) as fake:
        d = drivers(env(fake))
        init = d.initialize(fs=client_fs)
        assert init["protocolVersion"] == 1
        assert init["agentCapabilities"]["loadSession"] is True
        assert init["agentCapabilities"]["promptCapabilities"]["embeddedContext"] is True
        new = d.request("session/new", {"cwd": str(root), "mcpServers": []})
        sid = new["sessionId"]
        assert {m["id"] for m in new["modes"]["availableModes"]} == {
            "discussion",
            "brainstorming",
            "autopilot",
        }
        assert [o["id"] for o in new["configOptions"]] == ["mode", "agent"]
        d.wait(lambda e: e["type"] == "update" and "availableCommands" in e["params"]["update"])
        names = {c["name"] for c in d.updates("available_commands_update")[0]["availableCommands"]}
        assert {"mode", "plan show", "undo"} <= names
        d.request(
            "session/set_config_option",
            {"sessionId": sid, "configId": "agent", "value": "craftsman"},
        )
        d.request("session/set_mode", {"sessionId": sid, "modeId": "autopilot"})

        assert _prompt(d, sid, text("make x two"))["stopReason"] == "end_turn"

        (start,) = d.updates("tool_call")
        assert start["kind"] == "edit" and start["title"] == "edit a.py"
        assert start["status"] == "pending"
        assert start["locations"][0]["path"] == str(root / "a.py")
        updates = [
            u for u in d.updates("tool_call_update") if u["toolCallId"] == start["toolCallId"]
        ]
        assert [u["status"] for u in updates if u.get("status")] == ["in_progress", "completed"]
        (diff,) = [c for u in updates for c in u.get("content") or [] if c["type"] == "diff"]
        assert diff == {
            "type": "diff",
            "path": str(root / "a.py"),
            "oldText": "x = 1\n",
            "newText": "x = 2\n",
        }
        writes = [e for e in d.events if e["type"] == "fs_write"]
        if client_fs:  # through the editor (its buffer, its undo)
            assert [(w["path"], w["content"]) for w in writes] == [(str(root / "a.py"), "x = 2\n")]
        else:  # a client without fs/write_text_file: ndomo writes the file
            assert writes == []
        assert (root / "a.py").read_text() == "x = 2\n"
        assert "edited it" in _text(d.updates("agent_message_chunk"))
        assert len(fake.chat_requests()) == 2


def test_a_permission_round_trip_reject_once_then_allow_once(tmp_path, env, drivers):
    root = _workspace(tmp_path)
    bash = {"tool_calls": [{"name": "bash", "arguments": {"command": "echo hello-acp"}}]}
    with FakeModel(script=[bash, {"text": "one"}, bash, {"text": "two"}]) as fake:
        d = drivers(env(fake))
        d.initialize()
        sid = _session(d, root)
        d.permissions("deny", "once")
        assert _prompt(d, sid, text("say hello"))["stopReason"] == "end_turn"
        assert _prompt(d, sid, text("say hello again"))["stopReason"] == "end_turn"

        asked = [e for e in d.events if e["type"] == "permission"]
        assert [a["answer"] for a in asked] == ["deny", "once"]
        options = asked[0]["params"]["options"]
        assert [(o["optionId"], o["kind"]) for o in options] == [
            ("once", "allow_once"),
            ("session", "allow_always"),
            ("always", "allow_always"),
            ("deny", "reject_once"),
            ("never", "reject_always"),
        ]
        assert options[1]["name"] == "Allow for this session"
        assert "bash: echo *" in options[2]["name"]  # the scoped rule "Always" saves
        assert "bash: echo hello-acp" in options[4]["name"]  # the rule "Never" saves
        assert "echo hello-acp" in asked[0]["params"]["toolCall"]["title"]
        calls = d.updates("tool_call")
        assert [c["kind"] for c in calls] == ["execute", "execute"]
        assert calls[0]["title"] == "bash echo hello-acp"
        assert asked[0]["params"]["toolCall"]["toolCallId"] == calls[0]["toolCallId"]
        finals = {
            u["toolCallId"]: u["status"]
            for u in d.updates("tool_call_update")
            if u.get("status") in ("completed", "failed")
        }
        assert finals == {calls[0]["toolCallId"]: "failed", calls[1]["toolCallId"]: "completed"}
        # the denied command never ran; the allowed one's output reached the model
        results = [
            m["content"] for m in fake.chat_requests()[3]["body"]["messages"] if m["role"] == "tool"
        ]
        assert "did not approve" in results[0] and "exit code: 0\nhello-acp" in results[-1]


def test_never_saves_a_deny_rule_the_next_session_obeys_without_asking(tmp_path, env, drivers):
    root = _workspace(tmp_path)
    bash = {"tool_calls": [{"name": "bash", "arguments": {"command": "echo never-acp"}}]}
    with FakeModel(script=[bash, {"text": "one"}, bash, {"text": "two"}]) as fake:
        d = drivers(env(fake))
        d.initialize()
        d.permissions("never")
        assert _prompt(d, _session(d, root), text("say it"))["stopReason"] == "end_turn"
        second = _session(d, root)  # a new session: the rule is the project's
        assert _prompt(d, second, text("say it again"))["stopReason"] == "end_turn"

        asked = [e for e in d.events if e["type"] == "permission"]
        assert [a["answer"] for a in asked] == ["never"]  # asked once, never again
        first, again = (
            [
                m["content"]
                for m in fake.chat_requests()[i]["body"]["messages"]
                if m["role"] == "tool"
            ]
            for i in (1, 3)
        )
        assert "will not be asked again" in first[-1]
        assert "denied by a saved rule" in again[-1] and "never-acp\n" not in again[-1]


def test_cancel_mid_stream_answers_cancelled_and_the_session_goes_on(tmp_path, env, drivers):
    root = _workspace(tmp_path)
    slow = {
        "text": "first piece and then much more",
        "chunks": 5,
        "hold_until": str(tmp_path / "never"),
    }
    with FakeModel(script=[slow, {"text": "after the cancel"}]) as fake:
        d = drivers(env(fake))
        d.initialize()
        sid = _session(d, root)
        rid = d.start("session/prompt", {"sessionId": sid, "prompt": [text("talk")]})
        d.wait(
            lambda e: (
                e["type"] == "update"
                and e["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
            )
        )
        # a second prompt while one runs is refused, the running one goes on
        busy = d.error("session/prompt", {"sessionId": sid, "prompt": [text("again")]})
        assert busy["code"] == -32600 and "already running" in json.dumps(busy)
        d.notify("session/cancel", {"sessionId": sid})
        assert d.answer(rid)["result"] == {"stopReason": "cancelled"}
        assert fake.wait_for_disconnect(10)  # the model request was dropped, not left running
        assert _prompt(d, sid, text("go on"))["stopReason"] == "end_turn"
        assert "after the cancel" in _text(d.updates("agent_message_chunk"))


def test_mode_and_agent_switch(tmp_path, env, drivers):
    root = _workspace(tmp_path)
    with FakeModel(script=[]) as fake:
        d = drivers(env(fake))
        d.initialize()
        sid = d.request("session/new", {"cwd": str(root), "mcpServers": []})["sessionId"]
        d.request("session/set_mode", {"sessionId": sid, "modeId": "brainstorming"})
        mode = d.wait(
            lambda e: (
                e["type"] == "update"
                and e["params"]["update"]["sessionUpdate"] == "current_mode_update"
            )
        )
        assert mode["params"]["update"]["currentModeId"] == "brainstorming"
        got = d.request(
            "session/set_config_option",
            {"sessionId": sid, "configId": "agent", "value": "craftsman"},
        )
        current = {o["id"]: o["currentValue"] for o in got["configOptions"]}
        assert current["agent"] == "craftsman"
        got = d.request(
            "session/set_config_option",
            {"sessionId": sid, "configId": "mode", "value": "discussion"},
        )
        assert {o["id"]: o["currentValue"] for o in got["configOptions"]}["mode"] == "discussion"
        bad = d.error("session/set_mode", {"sessionId": sid, "modeId": "yolo"})
        assert bad["code"] == -32602 and "unknown mode" in json.dumps(bad)
        bad = d.error(
            "session/set_config_option", {"sessionId": sid, "configId": "agent", "value": "nobody"}
        )
        assert bad["code"] == -32602 and "unknown agent" in json.dumps(bad)
        # the turn runs in the mode the client chose
        _prompt(d, sid, text("hello"))
        system = fake.chat_requests()[0]["body"]["messages"][0]["content"]
        assert "discussion" in system.lower()


def test_session_load_after_the_agent_restarts_replays_the_history(tmp_path, env, drivers):
    root = _workspace(tmp_path)
    with FakeModel(script=[{"text": "remember the canary"}, {"text": "second answer"}]) as fake:
        first = drivers(env(fake))
        first.initialize()
        sid = _session(first, root)
        _prompt(first, sid, text("first question"))
        os.kill(first.agent_pid, signal.SIGKILL)  # the editor's client ends with its agent
        first.proc.wait(WAIT_S)
        first.close()

        second = drivers(env(fake))
        init = second.initialize()
        assert init["agentCapabilities"]["loadSession"] is True
        loaded = second.request(
            "session/load", {"sessionId": sid, "cwd": str(root), "mcpServers": []}
        )
        assert loaded["modes"]["currentModeId"] == "autopilot"
        listed = second.request("session/list", {"cwd": str(root)})
        assert sid in [x["sessionId"] for x in listed["sessions"]]
        assert "first question" in _text(second.updates("user_message_chunk"))
        assert "remember the canary" in _text(second.updates("agent_message_chunk"))
        _prompt(second, sid, text("second question"))
        history = [m.get("content") for m in fake.chat_requests()[1]["body"]["messages"]]
        assert "remember the canary" in history
        missing = second.error(
            "session/load", {"sessionId": "no-such-session", "cwd": str(root), "mcpServers": []}
        )
        assert missing["code"] == -32002


def test_a_mentioned_files_unsaved_content_reaches_the_model(tmp_path, env, drivers):
    root = _workspace(tmp_path)
    (root / "b.py").write_text("on_disk = True\n")
    (root / "c.py").write_text("also_disk = 1\n")
    read = {"tool_calls": [{"name": "read", "arguments": {"path": "c.py"}}]}
    with FakeModel(script=[read, {"text": "seen"}]) as fake:
        d = drivers(env(fake))
        d.initialize()
        sid = _session(d, root)
        d.buffer(root / "c.py", "UNSAVED_BUFFER_CANARY = 2\n")
        embedded = {
            "type": "resource",
            "resource": {
                "uri": (root / "b.py").as_uri(),
                "text": "UNSAVED_MENTION_CANARY = 1\n",
                "mimeType": "text/x-python",
            },
        }
        link = {"type": "resource_link", "uri": (root / "c.py").as_uri(), "name": "c.py"}
        _prompt(d, sid, text("look at these"), embedded, link)
        first = fake.chat_requests()[0]["body"]["messages"][-1]["content"]
        assert "UNSAVED_MENTION_CANARY" in first and "on_disk" not in first
        assert str(root / "c.py") in first
        # the read tool sees the editor's unsaved buffer through fs/read_text_file
        assert any(e["type"] == "fs_read" and e["unsaved"] for e in d.events)
        tool = [m for m in fake.chat_requests()[1]["body"]["messages"] if m["role"] == "tool"]
        assert "UNSAVED_BUFFER_CANARY" in tool[-1]["content"]


def test_a_big_embedded_file_is_cut_visibly_under_the_prompt(tmp_path, env, drivers):
    root = _workspace(tmp_path)
    big = "".join(f"line {i:05d} of a long buffer\n" for i in range(3000))  # 84,000 characters
    with FakeModel(script=[{"text": "seen"}]) as fake:
        d = drivers(env(fake))
        d.initialize()
        sid = _session(d, root)
        embedded = {
            "type": "resource",
            "resource": {"uri": (root / "big.txt").as_uri(), "text": big, "mimeType": "text/plain"},
        }
        _prompt(d, sid, text("summarize"), embedded)
        first = fake.chat_requests()[0]["body"]["messages"][-1]["content"]
    assert first.startswith("summarize\n\n[file: ")
    assert "Mentioned big.txt:\n```\nline 00000 of a long buffer" in first
    assert "line 02999" not in first
    assert "[cut: big.txt is 84,000 characters; lines 1-" in first


def test_an_untrusted_folder_says_so_first_and_names_ndomo_trust(tmp_path, env, drivers):
    root = _workspace(tmp_path, trusted=False)
    with FakeModel(script=[{"text": "hi"}]) as fake:
        d = drivers(env(fake))
        d.initialize()
        sid = d.request("session/new", {"cwd": str(root), "mcpServers": []})["sessionId"]
        _prompt(d, sid, text("hello"))
        first = d.updates("agent_message_chunk")[0]["content"]["text"]
        assert "not trusted" in first and f"ndomo trust {root.resolve()}" in first


def test_the_clients_mcp_servers_serve_the_session(tmp_path, env, drivers):
    root = _workspace(tmp_path)
    probe = str(Path(__file__).resolve().parents[1] / "fakes" / "mcp_probe.py")
    server = {"name": "probe", "command": sys.executable, "args": [probe], "env": []}
    echo = {"tool_calls": [{"name": "mcp__probe__echo", "arguments": {"text": "from-acp"}}]}
    with FakeModel(script=[echo, {"text": "done"}]) as fake:
        d = drivers(env(fake))
        caps = d.initialize()["agentCapabilities"]["mcpCapabilities"]
        assert caps["http"] is True and not caps.get("sse")
        new = {"cwd": str(root), "mcpServers": [server]}
        sid = d.request("session/new", new)["sessionId"]
        d.request(
            "session/set_config_option",
            {"sessionId": sid, "configId": "agent", "value": "craftsman"},
        )
        d.request("session/set_mode", {"sessionId": sid, "modeId": "autopilot"})
        d.permissions("once")  # the craftsman's `mcp` permission asks (its default)
        assert _prompt(d, sid, text("echo it"))["stopReason"] == "end_turn"
        offered = {t["function"]["name"] for t in fake.chat_requests()[0]["body"]["tools"]}
        assert "mcp__probe__echo" in offered
        tool = [m for m in fake.chat_requests()[1]["body"]["messages"] if m["role"] == "tool"]
        assert tool[-1]["content"].startswith("echo: from-acp")
        # starting the editor's server asked nothing (it is the user's); the call did
        (asked,) = [e for e in d.events if e["type"] == "permission"]
        assert "probe/echo" in asked["params"]["toolCall"]["title"]


def test_an_mcp_servers_prompts_become_commands_after_its_first_turn(tmp_path, env, drivers):
    root = _workspace(tmp_path)
    probe = str(Path(__file__).resolve().parents[1] / "fakes" / "mcp_probe.py")
    server = {"name": "probe", "command": sys.executable, "args": [probe], "env": []}
    with FakeModel(script=[{"text": "hello"}, {"text": "reviewed"}]) as fake:
        d = drivers(env(fake))
        d.initialize()
        sid = d.request("session/new", {"cwd": str(root), "mcpServers": [server]})["sessionId"]
        d.wait(lambda e: e["type"] == "update" and "availableCommands" in e["params"]["update"])
        (first,) = d.updates("available_commands_update")
        assert not any(c["name"].startswith("mcp__") for c in first["availableCommands"])
        assert _prompt(d, sid, text("hi"))["stopReason"] == "end_turn"  # starts the server
        later = d.updates("available_commands_update")
        assert len(later) == 2, "the list is sent again once the prompts are known"
        review = {c["name"]: c for c in later[1]["availableCommands"]}["mcp__probe__review"]
        assert review["input"]["hint"] == "/mcp__probe__review topic=<topic> [tone=<tone>]"
        assert _prompt(d, sid, text("/mcp__probe__review topic=acp"))["stopReason"] == "end_turn"
        users = [m for m in fake.chat_requests()[-1]["body"]["messages"] if m["role"] == "user"]
        assert users[-1]["content"] == "Review acp in a plain tone. (probe prompt)"
        assert len(d.updates("available_commands_update")) == 2  # unchanged: not sent again


def test_a_link_to_an_mcp_resource_is_read_through_its_server(tmp_path, env, drivers):
    root = _workspace(tmp_path)
    probe = str(Path(__file__).resolve().parents[1] / "fakes" / "mcp_probe.py")
    server = {"name": "probe", "command": sys.executable, "args": [probe], "env": []}

    def link(uri: str) -> dict[str, Any]:
        return {"type": "resource_link", "uri": uri, "name": uri.rsplit("/", 1)[-1]}

    with FakeModel(script=[{"text": "read"}]) as fake:
        d = drivers(env(fake))
        d.initialize()
        sid = d.request("session/new", {"cwd": str(root), "mcpServers": [server]})["sessionId"]
        # before any turn: the server is started to read it
        done = _prompt(d, sid, text("summarize"), link("probe://notes/readme"))
        assert done["stopReason"] == "end_turn"
        users = [m for m in fake.chat_requests()[-1]["body"]["messages"] if m["role"] == "user"]
        assert users[-1]["content"] == (
            "summarize\n\n[resource probe:probe://notes/readme]\n```\n"
            "probe readme: resource text\n```"
        )
        blob = d.error("session/prompt", {"sessionId": sid, "prompt": [link("probe://blob")]})
        assert "probe:probe://blob is a binary resource" in json.dumps(blob)
        assert len(fake.chat_requests()) == 1


def test_reasoning_streams_as_thought_chunks_and_stays_out_of_the_answer(tmp_path, env, drivers):
    root = _workspace(tmp_path)
    step = {"text": "it is 42", "reasoning": "six times seven is forty-two", "reasoning_chunks": 4}
    with FakeModel(script=[step, {"text": "ok"}]) as fake:
        d = drivers(env(fake))
        d.initialize()
        sid = _session(d, root)
        res = _prompt(d, sid, text("what is 6*7?"))
        assert res["stopReason"] == "end_turn"
        usage = res["usage"]  # the turn's tokens, as the model server counted them
        assert usage["inputTokens"] > 0 and usage["outputTokens"] > 0
        assert usage["totalTokens"] == usage["inputTokens"] + usage["outputTokens"]
        assert _text(d.updates("agent_thought_chunk")) == "six times seven is forty-two"
        assert _text(d.updates("agent_message_chunk")) == "it is 42"
        _prompt(d, sid, text("thanks"))
        said = [m for m in fake.chat_requests()[1]["body"]["messages"] if m["role"] == "assistant"]
        assert said[-1]["content"] == "it is 42"  # the history keeps the answer alone


def test_protocol_errors(tmp_path, env, drivers):
    root = _workspace(tmp_path)
    with FakeModel(script=[]) as fake:
        d = drivers(env(fake))
        d.initialize()
        unknown = d.error("session/prompt", {"sessionId": "nope", "prompt": [text("hi")]})
        assert unknown["code"] == -32002
        sse = {"type": "sse", "name": "old", "url": "http://127.0.0.1:9/sse", "headers": []}
        mcp = d.error("session/new", {"cwd": str(root), "mcpServers": [sse]})
        assert mcp["code"] == -32602 and "not sse" in json.dumps(mcp)
        named = {"name": "a b", "command": "x", "args": [], "env": []}
        mcp = d.error("session/new", {"cwd": str(root), "mcpServers": [named]})
        assert mcp["code"] == -32602 and "MCP server name" in json.dumps(mcp)
        relative = d.error("session/new", {"cwd": "ws", "mcpServers": []})
        assert relative["code"] == -32602 and "absolute" in json.dumps(relative)
        bad = d.error("session/prompt", {"sessionId": 5})
        assert bad["code"] == -32602
        sid = d.request("session/new", {"cwd": str(root), "mcpServers": []})["sessionId"]
        image = {"type": "image", "data": "AAAA", "mimeType": "image/png"}
        refused = d.error("session/prompt", {"sessionId": sid, "prompt": [image]})
        assert refused["code"] == -32602 and "image" in json.dumps(refused)
        assert fake.chat_requests() == []  # nothing reached the model


def test_a_client_gone_mid_turn_ends_the_agent_and_its_command(tmp_path, env, drivers):
    root = _workspace(tmp_path)
    canary = tmp_path / "still-running"
    sleeper = {
        "tool_calls": [{"name": "bash", "arguments": {"command": f"sleep 30; touch {canary}"}}]
    }
    with FakeModel(script=[sleeper]) as fake:
        d = drivers(env(fake))
        d.initialize()
        sid = _session(d, root)
        d.permissions("once")
        d.start("session/prompt", {"sessionId": sid, "prompt": [text("wait")]})
        d.wait(
            lambda e: e["type"] == "update" and e["params"]["update"].get("status") == "in_progress"
        )
        time.sleep(0.5)
        d.proc.kill()  # the editor dies: the agent's stdin closes
        d.proc.wait()
        _gone(d.agent_pid)
        out = subprocess.run(["pgrep", "-f", f"touch {canary}"], capture_output=True, text=True)
        assert out.stdout.strip() == ""  # its command did not outlive it
        assert len(fake.chat_requests()) == 1


def _commit_plan(root: Path, session: str, tasks: list[str]) -> list[int]:
    """A plan committed to the session through a separate store connection, as the foreman's
    commit does; returns its task ids."""
    import asyncio

    from ndomo.store.models import PlanCreate, TaskCreate
    from ndomo.store.store import PlanStore

    async def go() -> list[int]:
        store = await PlanStore.open(root / ".ndomo" / "ndomo.db", workspace=root)
        try:
            plan = await store.create_plan(PlanCreate(title="Tidy the parser", overview="tidy"))
            batch = await store.create_tasks(plan.id, [TaskCreate(description=t) for t in tasks])
            await store.update_session(session, committed_plan_id=plan.id)
            return [t.id for t in batch.tasks]
        finally:
            await store.close()

    return asyncio.run(go())


def _plan_update(d: Driver, statuses: list[str]) -> dict[str, Any]:
    return d.wait(
        lambda e: (
            e["type"] == "update"
            and e["params"]["update"]["sessionUpdate"] == "plan"
            and [x["status"] for x in e["params"]["update"]["entries"]] == statuses
        )
    )


def test_plan_updates_follow_task_changes_made_by_another_process(tmp_path, env, drivers):
    root = _workspace(tmp_path)
    with FakeModel(script=[]) as fake:
        d = drivers(env(fake))
        d.initialize()
        sid = d.request("session/new", {"cwd": str(root), "mcpServers": []})["sessionId"]
        t1, _t2 = _commit_plan(root, sid, ["Parse the header", "Parse the body"])
        shown = _plan_update(d, ["pending", "pending"])
        assert [x["content"] for x in shown["params"]["update"]["entries"]] == [
            "Parse the header",
            "Parse the body",
        ]
        cli = [sys.executable, "-m", "ndomo", "task", "status", "--id", str(t1)]
        out = subprocess.run(
            [*cli, "--status", "done", "--workspace", str(root)],
            capture_output=True,
            text=True,
            timeout=60,
            env=env(fake),
        )
        assert out.returncode == 0, out.stderr
        _plan_update(d, ["completed", "pending"])
        # a mode switched from the CLI reaches the client as current_mode_update
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "ndomo",
                "mode",
                "set",
                "--mode",
                "brainstorming",
                "--session",
                sid,
                "--workspace",
                str(root),
            ],
            capture_output=True,
            text=True,
            timeout=60,
            env=env(fake),
        )
        assert out.returncode == 0, out.stderr
        d.wait(
            lambda e: (
                e["type"] == "update"
                and e["params"]["update"].get("currentModeId") == "brainstorming"
            )
        )
