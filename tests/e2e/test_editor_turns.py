"""Turns from an editor: code action → turn → versioned applyEdit, progress, cancel, undo,
refused edits, approvals and a server that answers while the model is slow."""

from __future__ import annotations

import asyncio

import pytest
from lsprotocol import types

from tests.e2e.conftest import command
from tests.e2e.editor_support import EditorDisk, code_actions, wait_for
from tests.fakes.fake_model import FakeModel


def _tool_messages(fake: FakeModel) -> list[str]:
    return [
        m["content"]
        for r in fake.chat_requests()
        for m in r["body"]["messages"]
        if m["role"] == "tool"
    ]


def _plain(value):
    """A notification's params as plain dicts (pygls gives unknown methods' params as
    named tuples)."""
    if hasattr(value, "_asdict"):
        return {k: _plain(v) for k, v in value._asdict().items()}
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _document_changes(client) -> bool:
    we = client.capabilities.workspace.workspace_edit
    return bool(we and we.document_changes)


def _progress(client) -> tuple[str, list]:
    tokens = [
        t for t, reports in client.progress_reports.items() if str(t).startswith("ndomo-turn-")
    ]
    assert len(tokens) == 1, client.progress_reports
    return tokens[0], client.progress_reports[tokens[0]]


async def test_code_action_turn_edits_open_buffer_with_progress_and_undo(lsp, tmp_path):
    src = tmp_path / "app.py"
    src.write_text(
        "x = 1\n", encoding="utf-8"
    )  # the open buffer differs from disk: tools read the buffer
    script = [
        {
            "tool_calls": [
                {
                    "name": "edit",
                    "arguments": {
                        "path": "app.py",
                        "old_text": "# buffer only",
                        "new_text": "# fixed",
                    },
                }
            ]
        },
        {"text": "fixed it"},
        {
            "tool_calls": [
                {
                    "name": "edit",
                    "arguments": {"path": "app.py", "old_text": "# fixed", "new_text": "# again"},
                }
            ]
        },
        {"text": "again"},
    ]
    disk = EditorDisk()
    with FakeModel(script=script) as fake:
        client = await lsp.start(
            tmp_path,
            env={"NDOMO_BASE_URL": fake.url},
            init_options={"open_transcript": True},
            handlers={types.WORKSPACE_APPLY_EDIT: lambda p: disk.handler(p)},
        )
        uri = disk.open(client, src, "x = 1\n# buffer only\n", version=3)
        sel = types.Range(
            start=types.Position(line=1, character=0), end=types.Position(line=1, character=13)
        )
        actions = await code_actions(
            client,
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                range=sel,
                context=types.CodeActionContext(diagnostics=[]),
            ),
        )
        fix = next(a for a in actions if a.title == "ndomo: Fix with craftsman")
        summary = await command(client, fix.command.command, fix.command.arguments[0])
        assert summary["status"] == "done", summary
        assert summary["modified"] == ["app.py"]

        # one applyEdit on the open document: versioned when the client supports document changes
        edit = disk.requests[0].edit
        if _document_changes(client):
            assert edit.changes is None
            (change,) = edit.document_changes
            assert change.text_document.uri == uri and change.text_document.version == 3
        else:
            assert edit.document_changes is None and list(edit.changes) == [uri]
        assert disk.buffers[uri][1] == "x = 1\n# fixed\n" == src.read_text(encoding="utf-8")

        # the turn was a cancellable progress: begin, reports, end
        token, reports = _progress(client)
        assert isinstance(reports[0], types.WorkDoneProgressBegin)
        assert reports[0].title == "craftsman · autopilot" and reports[0].cancellable is True
        assert any(
            isinstance(r, types.WorkDoneProgressReport) and "edit" in (r.message or "")
            for r in reports
        )
        assert isinstance(reports[-1], types.WorkDoneProgressEnd) and reports[-1].message == "done"
        # with open_transcript, the session's export is shown beside the code, without focus
        shown = [d for d in client.shown_documents if "/.ndomo/sessions/" in d.uri]
        assert (
            shown and shown[0].uri.endswith(f"{summary['session']}.md") and not shown[0].take_focus
        )

        # undo restores the buffer through another versioned applyEdit
        result = await command(client, "ndomo.undo", {})
        assert result["restored"] == ["app.py"] and result["turn_id"] == summary["turn_id"]
        if _document_changes(client):
            assert disk.requests[-1].edit.document_changes[0].text_document.version == 4
        assert disk.buffers[uri][1] == "x = 1\n# buffer only\n" == src.read_text(encoding="utf-8")
        # nothing left to undo
        assert (await command(client, "ndomo.undo", {}))["turn_id"] is None

        # a change made after the turn: undo refuses and names the file; force overwrites
        disk.type_into(uri, "x = 1\n# fixed\n")  # so the second scripted edit applies
        summary2 = await command(
            client, "ndomo.turn", {"prompt": "again", "agent": "craftsman", "mode": "autopilot"}
        )
        assert summary2["status"] == "done"
        disk.type_into(uri, "x = 2\n# again\n")
        with pytest.raises(Exception) as err:
            await command(client, "ndomo.undo", {})
        assert "app.py" in str(err.value) and "changed since" in str(err.value)
        assert disk.buffers[uri][1] == "x = 2\n# again\n"
        forced = await command(client, "ndomo.undo", {"force": True})
        assert forced["restored"] == ["app.py"]
        assert disk.buffers[uri][1] == "x = 1\n# fixed\n"


async def test_refused_edit_writes_nothing_and_the_model_is_told(lsp, tmp_path):
    src = tmp_path / "app.py"
    src.write_text("x = 1\n", encoding="utf-8")
    script = [
        {
            "tool_calls": [
                {
                    "name": "edit",
                    "arguments": {"path": "app.py", "old_text": "x = 1", "new_text": "x = 2"},
                }
            ]
        },
        {"text": "the user refused"},
    ]
    disk = EditorDisk()
    disk.refuse = True
    with FakeModel(script=script) as fake:
        client = await lsp.start(
            tmp_path,
            env={"NDOMO_BASE_URL": fake.url},
            init_options={"open_transcript": False},
            handlers={types.WORKSPACE_APPLY_EDIT: lambda p: disk.handler(p)},
        )
        summary = await command(
            client, "ndomo.turn", {"prompt": "bump x", "agent": "craftsman", "mode": "autopilot"}
        )
        assert summary["status"] == "done" and summary["modified"] == []
        assert len(disk.requests) == 1
        assert src.read_text(encoding="utf-8") == "x = 1\n"
        told = _tool_messages(fake)
        assert told and "user rejected the edit" in told[0]
        assert (await command(client, "ndomo.undo", {}))["turn_id"] is None  # nothing was recorded


async def test_progress_cancel_ends_the_turn_and_server_answers_while_model_is_slow(lsp, tmp_path):
    (tmp_path / "a.py").write_text("pass\n", encoding="utf-8")
    with FakeModel(script=[{"text": "slow answer", "delay": 3}]) as fake:
        client = await lsp.start(
            tmp_path, env={"NDOMO_BASE_URL": fake.url}, init_options={"open_transcript": False}
        )
        turn = asyncio.create_task(command(client, "ndomo.turn", {"prompt": "think hard"}))
        await wait_for(
            lambda: any(
                str(t).startswith("ndomo-turn-") and r for t, r in client.progress_reports.items()
            ),
            what="progress begin",
        )
        await wait_for(lambda: fake.chat_requests(), what="the model call")
        # requests are answered while the model stream is slow
        report = await command(client, "ndomo.mode.get", {})
        assert report["mode"]
        actions = await code_actions(
            client,
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=(tmp_path / "a.py").as_uri()),
                range=types.Range(
                    start=types.Position(line=0, character=0),
                    end=types.Position(line=0, character=4),
                ),
                context=types.CodeActionContext(diagnostics=[]),
            ),
        )
        assert any(a.title == "ndomo: Ask about this" for a in actions)
        assert not turn.done()
        # the user cancels the progress in the editor: the turn ends as cancelled
        token, _ = _progress(client)
        client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token))
        summary = await asyncio.wait_for(turn, 10)
        assert summary["status"] == "cancelled"
        _, reports = _progress(client)
        assert isinstance(reports[-1], types.WorkDoneProgressEnd)
        assert reports[-1].message.startswith("cancelled")


async def test_a_code_action_turns_started_event_names_its_file_lines_and_text(lsp, tmp_path):
    """The conversation view's chip under a code action's prompt: `turn_started` carries the
    file (as the workspace shows it), the selected whole lines and their text (the open
    buffer's); a typed prompt's event carries none."""
    (tmp_path / "calc.py").write_text("x = 0\n", encoding="utf-8")
    disk = EditorDisk()
    events: list[dict] = []
    with FakeModel(script=[{"text": "looked"}, {"text": "typed"}]) as fake:
        client = await lsp.start(
            tmp_path,
            env={"NDOMO_BASE_URL": fake.url},
            handlers={types.WORKSPACE_APPLY_EDIT: lambda p: disk.handler(p)},
        )
        client.feature("ndomo/turn/event")(lambda p: events.append(_plain(p)))
        text = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n"
        uri = disk.open(client, tmp_path / "calc.py", text, version=1)
        sel = types.Range(  # lines 2-3, ending at the start of line 4: line 4 is not taken
            start=types.Position(line=1, character=4), end=types.Position(line=3, character=0)
        )
        actions = await code_actions(
            client,
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                range=sel,
                context=types.CodeActionContext(diagnostics=[]),
            ),
        )
        ask = next(a for a in actions if a.title == "ndomo: Ask about this")
        assert (await command(client, ask.command.command, ask.command.arguments[0]))[
            "status"
        ] == "done"
        await command(client, "ndomo.turn", {"prompt": "typed"})
        await wait_for(lambda: sum(e["kind"] == "turn_started" for e in events) == 2)
    first, second = [e for e in events if e["kind"] == "turn_started"]
    assert first["selection"] == {
        "path": "calc.py",
        "start_line": 2,
        "end_line": 3,
        "text": "    return a - b\n",
    }, first
    assert second["selection"] is None and second["prompt"] == "typed"
