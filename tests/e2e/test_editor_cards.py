"""What a conversation view's cards show beyond a tool's status, live and from the stored
history after a server restart: how an approval was decided, the sandbox a command ran in,
the diff of each file a call changed, and the code action's selection (its chip)."""

from __future__ import annotations

from lsprotocol import types
from pygls.uris import from_fs_path

from tests.e2e.conftest import command
from tests.e2e.editor_support import EditorDisk, wait_for
from tests.fakes.fake_model import FakeModel

PATCH = "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n"


def _plain(value):
    if hasattr(value, "_asdict"):
        return {k: _plain(v) for k, v in value._asdict().items()}
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _calls(view: dict) -> dict[str, dict]:
    return {
        (
            i["name"]
            + ":"
            + (i["arguments"].get("command") or i["arguments"].get("path") or "patch")
        ): i
        for t in view["turns"]
        for i in t["items"]
        if i["kind"] == "tool"
    }


async def test_decisions_sandbox_diffs_and_the_chip_come_back_after_a_restart(lsp, tmp_path):
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a - b\n", encoding="utf-8")
    offline = {"tool_calls": [{"name": "bash", "arguments": {"command": "echo cards-offline"}}]}
    online = {
        "tool_calls": [
            {"name": "bash", "arguments": {"command": "echo cards-net", "network": True}}
        ]
    }
    write = {
        "tool_calls": [{"name": "write", "arguments": {"path": "new.txt", "content": "a\nb\n"}}]
    }
    patch = {"tool_calls": [{"name": "apply_patch", "arguments": {"patch": PATCH}}]}
    denied = {
        "tool_calls": [{"name": "bash", "arguments": {"command": "echo cards-no", "network": True}}]
    }
    script = [offline, {"text": "ran"}, online, write, patch, denied, {"text": "done"}]
    answers = ["once", "deny"]
    events: list[dict] = []
    disk = EditorDisk()
    with FakeModel(script=script) as fake:
        client = await lsp.start(
            tmp_path,
            env={"NDOMO_BASE_URL": fake.url},
            init_options={"open_transcript": False, "sandbox": {"auto_allow": True}},
            experimental={"ndomo": {"approvals": True}},
            handlers={
                "ndomo/approve": lambda p: {"choice": answers.pop(0)},
                types.WORKSPACE_APPLY_EDIT: lambda p: disk.handler(p),
            },
        )
        client.feature("ndomo/turn/event")(lambda p: events.append(_plain(p)))
        uri = from_fs_path(str(tmp_path / "calc.py"))
        turn = {"agent": "craftsman", "mode": "autopilot"}
        first = await command(
            client,
            "ndomo.turn",
            {
                **turn,
                "prompt": "run it",
                "uri": uri,
                "range": {"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 9}},
            },
        )
        assert first["status"] == "done", first
        assert (await command(client, "ndomo.turn", {**turn, "prompt": "change it"}))[
            "status"
        ] == "done"
        await wait_for(lambda: sum(e["kind"] == "turn_finished" for e in events) == 2)
    assert answers == []  # the networked command was asked (and approved once), then denied

    # live: each decision as its own event, the sandbox and the diffs on tool_finished
    assert [e["text"] for e in events if e["kind"] == "decision"] == [
        "auto-allowed (sandboxed, offline)",
        "approved once by you",
        "denied by you",
    ]
    started = {e["call_id"]: e for e in events if e["kind"] == "tool_started"}
    decided = [
        started[e["call_id"]]["arguments"].get("command") for e in events if e["kind"] == "decision"
    ]
    assert decided == ["echo cards-offline", "echo cards-net", "echo cards-no"]
    finished = {
        e["name"] + str(i): e
        for i, e in enumerate(e for e in events if e["kind"] == "tool_finished")
    }
    assert finished["bash0"]["sandbox"] == "sandboxed · offline"
    assert finished["bash1"]["sandbox"] == "sandboxed · network"
    (made,) = finished["write2"]["files"]
    assert made["path"] == "new.txt" and made["kind"] == "create" and made["line"] == 1
    assert made["diff"].startswith("--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+a\n+b\n")
    (patched,) = finished["apply_patch3"]["files"]
    assert patched["kind"] == "modify" and patched["line"] == 2  # the first changed line
    assert "-    return a - b\n+    return a + b\n" in patched["diff"]
    assert finished["bash4"]["status"] == "refused" and finished["bash4"]["sandbox"] is None

    # a new server (the editor reloaded): the stored history has the same
    restarted = await lsp.start(
        tmp_path,
        env={"NDOMO_BASE_URL": "http://127.0.0.1:9"},
        init_options={"open_transcript": False},
    )
    view = _plain(await command(restarted, "ndomo.session.open", {}))
    assert [t["prompt"] for t in view["turns"]] == ["run it", "change it"]
    chip, typed = (t["selection"] for t in view["turns"])
    assert chip == {"path": "calc.py", "start_line": 2, "end_line": 2, "text": "    return a - b"}
    assert typed is None
    calls = _calls(view)
    assert calls["bash:echo cards-offline"]["decision"] == "auto-allowed (sandboxed, offline)"
    assert calls["bash:echo cards-offline"]["sandbox"] == "sandboxed · offline"
    assert calls["bash:echo cards-net"]["decision"] == "approved once by you"
    assert calls["bash:echo cards-net"]["sandbox"] == "sandboxed · network"
    assert calls["bash:echo cards-no"]["decision"] == "denied by you"
    assert calls["bash:echo cards-no"]["status"] == "refused"
    assert calls["write:new.txt"]["files"] == [made]
    assert calls["apply_patch:patch"]["files"] == [patched]
    assert calls["write:new.txt"]["decision"] is None and calls["write:new.txt"]["sandbox"] is None
