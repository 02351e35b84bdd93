"""Approvals as 5-choice requests (2 for a control file), saved and revoked; edits for review;
agent-file diagnostics."""

from __future__ import annotations

import shutil

from lsprotocol import types
from pygls.uris import from_fs_path

from tests.e2e.conftest import command
from tests.e2e.editor_support import EditorDisk, wait_for
from tests.fakes.fake_model import FakeModel
from tests.trusting import trust

CHOICES = ["Once", "Session", "Always", "Deny", "Never"]


async def test_always_allow_is_not_asked_again_until_revoked(lsp, tmp_path):
    bash = {"tool_calls": [{"name": "bash", "arguments": {"command": "echo hello-ndomo"}}]}
    script = [bash, {"text": "one"}, bash, {"text": "two"}, bash, {"text": "three"}]
    asked: list[types.ShowMessageRequestParams] = []
    answers = ["Always", "Deny"]

    def on_request(params: types.ShowMessageRequestParams):
        asked.append(params)
        return types.MessageActionItem(title=answers.pop(0))

    with FakeModel(script=script) as fake:
        client = await lsp.start(
            tmp_path,
            env={"NDOMO_BASE_URL": fake.url},
            init_options={"open_transcript": False},
            handlers={types.WINDOW_SHOW_MESSAGE_REQUEST: on_request},
        )
        turn = {"prompt": "say hello", "agent": "craftsman", "mode": "autopilot"}
        first = await command(client, "ndomo.turn", turn)
        assert first["status"] == "done"
        assert len(asked) == 1 and [a.title for a in asked[0].actions] == CHOICES
        assert "echo hello-ndomo" in asked[0].message
        # the prompt says where the command runs and that approving it gives it network
        sandboxed = "sandboxed (bubblewrap)" if shutil.which("bwrap") else "NOT sandboxed"
        assert f"if allowed it runs WITH network, {sandboxed}" in asked[0].message
        # a plain client's question: three short lines, why · who wants what · what lasts
        reason, who, lasting = asked[0].message.split("\n")
        assert reason.endswith(f" · if allowed it runs WITH network, {sandboxed}"), reason
        assert who == "craftsman (autopilot) wants bash: echo hello-ndomo"
        assert lasting == (
            "Session: allow `echo *` until the session ends · Always: allow it in this project"
            " · Never: deny this exact call in this project"
        )
        assert len(asked[0].message) <= 400

        new = await command(client, "ndomo.session.new", {})
        assert new["session"] != first["session"]
        second = await command(client, "ndomo.turn", turn)
        assert second["status"] == "done" and second["session"] == new["session"]
        assert len(asked) == 1  # the project-wide answer was remembered
        assert (
            "hello-ndomo"
            in [
                m for r in fake.chat_requests()[3:4] for m in [r["body"]["messages"][-1]["content"]]
            ][0]
        )

        saved = await command(client, "ndomo.approvals.list", {})
        (rule,) = [a for a in saved if a["permission"] == "bash"]
        assert rule["scope"] == "project" and rule["action"] == "allow"
        assert await command(client, "ndomo.approvals.revoke", {"id": rule["id"]}) == {
            "revoked": rule["id"]
        }
        assert [
            a
            for a in await command(client, "ndomo.approvals.list", {})
            if a["permission"] == "bash"
        ] == []

        third = await command(client, "ndomo.turn", turn)
        assert len(asked) == 2  # asked again, and this time denied
        assert third["status"] == "done"
        denied = fake.chat_requests()[5]["body"]["messages"][-1]["content"]
        assert "did not approve" in denied


async def test_never_from_the_editor_saves_a_deny_rule_the_next_turn_obeys(lsp, tmp_path):
    bash = {"tool_calls": [{"name": "bash", "arguments": {"command": "echo never-again"}}]}
    script = [bash, {"text": "one"}, bash, {"text": "two"}]
    asked: list[types.ShowMessageRequestParams] = []

    def on_request(params: types.ShowMessageRequestParams):
        asked.append(params)
        return types.MessageActionItem(title="Never")

    with FakeModel(script=script) as fake:
        client = await lsp.start(
            tmp_path,
            env={"NDOMO_BASE_URL": fake.url},
            init_options={"open_transcript": False},
            handlers={types.WINDOW_SHOW_MESSAGE_REQUEST: on_request},
        )
        turn = {"prompt": "say it", "agent": "craftsman", "mode": "autopilot"}
        await command(client, "ndomo.turn", turn)
        assert len(asked) == 1 and "Never: deny this exact call in this project" in asked[0].message
        saved = await command(client, "ndomo.approvals.list", {})
        assert [(a["permission"], a["pattern"], a["action"]) for a in saved] == [
            ("bash", "echo never-again", "deny")
        ]
        await command(client, "ndomo.turn", turn)
        assert len(asked) == 1  # refused by the saved rule, not asked again
        refused = fake.chat_requests()[3]["body"]["messages"][-1]["content"]
        assert "denied by a saved rule" in refused


async def test_a_control_file_toast_offers_once_or_deny_only(lsp, tmp_path):
    write = {
        "tool_calls": [{"name": "write", "arguments": {"path": "AGENTS.md", "content": "x\n"}}]
    }
    asked: list[types.ShowMessageRequestParams] = []

    def on_request(params: types.ShowMessageRequestParams):
        asked.append(params)
        return types.MessageActionItem(title="Never")  # not offered: a deny, nothing saved

    with FakeModel(script=[write, {"text": "done"}]) as fake:
        client = await lsp.start(
            tmp_path,
            env={"NDOMO_BASE_URL": fake.url},
            init_options={"open_transcript": False},
            handlers={types.WINDOW_SHOW_MESSAGE_REQUEST: on_request},
        )
        turn = {"prompt": "write it", "agent": "craftsman", "mode": "autopilot"}
        await command(client, "ndomo.turn", turn)
    assert [[a.title for a in q.actions] for q in asked] == [["Once", "Deny"]]
    assert "AGENTS.md" in asked[0].message and "Always:" not in asked[0].message
    assert len(asked[0].message.split("\n")) == 2  # why · who wants what: nothing is saved
    assert await command(client, "ndomo.approvals.list", {}) == []
    assert not (tmp_path / "AGENTS.md").exists()


async def test_review_edits_and_agent_file_diagnostics(lsp, tmp_path):
    agents = tmp_path / ".ndomo" / "agents"
    agents.mkdir(parents=True)
    trust(tmp_path)  # a folder's agent files are read once the user trusts it
    bad = agents / "helper.md"
    bad.write_text("---\ndescription: helps\nmode: sometimes\n---\nYou help.\n", encoding="utf-8")
    (tmp_path / "app.py").write_text("x = 1\n", encoding="utf-8")
    script = [
        {
            "tool_calls": [
                {
                    "name": "edit",
                    "arguments": {"path": "app.py", "old_text": "x = 1", "new_text": "x = 2"},
                }
            ]
        },
        {"text": "bumped"},
    ]
    disk = EditorDisk()
    with FakeModel(script=script) as fake:
        client = await lsp.start(
            tmp_path,
            env={"NDOMO_BASE_URL": fake.url},
            init_options={"open_transcript": False, "review_edits": True},
            handlers={types.WORKSPACE_APPLY_EDIT: lambda p: disk.handler(p)},
        )
        # a broken agent file is marked at start, on the offending line
        uri = from_fs_path(str(bad))
        diags = await wait_for(lambda: client.diagnostics.get(uri), what="agent file diagnostics")
        assert (
            diags[0].source == "ndomo"
            and diags[0].range.start.line == 2
            and "mode" in diags[0].message
        )
        # fixed and saved: cleared
        bad.write_text(
            "---\ndescription: helps\nmode: subagent\n---\nYou help.\n", encoding="utf-8"
        )
        client.text_document_did_save(
            types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )
        await wait_for(
            lambda: client.diagnostics.get(uri) is not None and len(client.diagnostics[uri]) == 0,
            what="agent diagnostics cleared",
        )

        summary = await command(
            client, "ndomo.turn", {"prompt": "bump", "agent": "craftsman", "mode": "autopilot"}
        )
        assert summary["status"] == "done"
        edit = disk.requests[0].edit
        we = client.capabilities.workspace.workspace_edit
        if we and we.document_changes and we.change_annotation_support:
            (ann,) = edit.change_annotations.values()
            assert ann.needs_confirmation is True
            (change,) = edit.document_changes
            assert change.edits[0].annotation_id in edit.change_annotations
        else:
            assert not edit.change_annotations
        assert (tmp_path / "app.py").read_text(encoding="utf-8") == "x = 2\n"


async def test_an_editor_error_during_approval_fails_the_call_with_its_message(lsp, tmp_path):
    """The editor failing to show the request is not the user saying "deny"."""
    bash = {"tool_calls": [{"name": "bash", "arguments": {"command": "echo hello-ndomo"}}]}
    asked: list[types.ShowMessageRequestParams] = []

    def on_request(params: types.ShowMessageRequestParams):
        asked.append(params)
        raise RuntimeError("message UI crashed")

    with FakeModel(script=[bash, {"text": "one"}]) as fake:
        client = await lsp.start(
            tmp_path,
            env={"NDOMO_BASE_URL": fake.url},
            init_options={"open_transcript": False},
            handlers={types.WINDOW_SHOW_MESSAGE_REQUEST: on_request},
        )
        summary = await command(
            client, "ndomo.turn", {"prompt": "say hello", "agent": "craftsman", "mode": "autopilot"}
        )
        assert summary["status"] == "done" and len(asked) == 1
        result = fake.chat_requests()[1]["body"]["messages"][-1]["content"]
        assert "could not ask the user" in result and "message UI crashed" in result, result
        assert "did not approve" not in result


def _field(params, name):
    """A custom request's params field (pygls hands them over as an object or a dict)."""
    return params[name] if isinstance(params, dict) else getattr(params, name)


async def test_a_client_announcing_approvals_gets_their_parts_and_answers_by_id(lsp, tmp_path):
    """`experimental.ndomo.approvals`: `ndomo/approve` carries reason, subject, rule, sandbox,
    network and the choices apart (no showMessageRequest); the answer's id is the choice."""
    echo_call = {"tool_calls": [{"name": "bash", "arguments": {"command": "echo structured-ask"}}]}
    script = [echo_call, {"text": "one"}, echo_call, {"text": "two"}]
    structured: list = []
    plain: list = []

    def on_approve(params):
        structured.append(params)
        return {"choice": "project"}

    def on_message(params):
        plain.append(params)
        return None

    with FakeModel(script=script) as fake:
        client = await lsp.start(
            tmp_path,
            env={"NDOMO_BASE_URL": fake.url},
            init_options={"open_transcript": False},
            experimental={"ndomo": {"approvals": True}},
            handlers={"ndomo/approve": on_approve, types.WINDOW_SHOW_MESSAGE_REQUEST: on_message},
        )
        turn = {"prompt": "test it", "agent": "craftsman", "mode": "autopilot"}
        assert (await command(client, "ndomo.turn", turn))["status"] == "done"
        assert plain == [] and len(structured) == 1
        p = structured[0]
        sandboxed = "sandboxed (bubblewrap)" if shutil.which("bwrap") else "NOT sandboxed"
        assert _field(p, "permission") == "bash" and _field(p, "subject") == "echo structured-ask"
        assert _field(p, "reason") and "\n" not in _field(p, "reason")
        assert _field(p, "rule") == "echo *"  # what Always saves, a scoped rule
        assert _field(p, "sandbox") == sandboxed and _field(p, "network") is True
        assert (_field(p, "agent"), _field(p, "mode")) == ("craftsman", "autopilot")
        choices = [
            (_field(c, "id"), _field(c, "label"), _field(c, "detail")) for c in _field(p, "choices")
        ]
        assert choices == [
            ("once", "Run once", "allow this call only"),
            ("session", "Session", "allow `echo *` until the session ends"),
            ("project", "Always", "allow `echo *` in this project"),
            ("deny", "Deny", "refuse this call"),
            ("never", "Never", "deny this exact call in this project"),
        ]
        # the short question rides along, for a notification when the client shows one
        assert "craftsman (autopilot) wants bash: echo structured-ask" in _field(p, "message")
        saved = await command(client, "ndomo.approvals.list", {})
        assert [(a["permission"], a["pattern"], a["action"]) for a in saved] == [
            ("bash", "echo *", "allow")
        ]
        await command(client, "ndomo.turn", turn)
        assert len(structured) == 1  # "Always" (by id) was saved: not asked again


async def test_an_answer_not_offered_denies(lsp, tmp_path):
    write = {
        "tool_calls": [{"name": "write", "arguments": {"path": "AGENTS.md", "content": "x\n"}}]
    }
    structured: list = []

    def on_approve(params):
        structured.append(params)
        return {"choice": "project"}  # a control file offers once and deny only

    with FakeModel(script=[write, {"text": "done"}]) as fake:
        client = await lsp.start(
            tmp_path,
            env={"NDOMO_BASE_URL": fake.url},
            init_options={"open_transcript": False},
            experimental={"ndomo": {"approvals": True}},
            handlers={"ndomo/approve": on_approve},
        )
        await command(
            client, "ndomo.turn", {"prompt": "w", "agent": "craftsman", "mode": "autopilot"}
        )
    (p,) = structured
    assert [(_field(c, "id"), _field(c, "label")) for c in _field(p, "choices")] == [
        ("once", "Allow once"),
        ("deny", "Deny"),
    ]
    assert _field(p, "rule") == "" and _field(p, "network") is None
    assert await command(client, "ndomo.approvals.list", {}) == []
    assert not (tmp_path / "AGENTS.md").exists()
