"""Agent edits as an editor sees them: minimal text edits (not whole-file replacements),
and the files a turn edited saved before `bash` reads the disk."""

from __future__ import annotations

import pytest
from lsprotocol import types
from pygls.uris import from_fs_path

from tests.e2e.conftest import command
from tests.e2e.editor_support import EditorDisk, wait_for
from tests.fakes.fake_model import FakeModel

SAVE = {"ndomo": {"saveDocuments": True}}


def _sent_edits(edit: types.WorkspaceEdit) -> list:
    if edit.document_changes:
        return [e for c in edit.document_changes for e in c.edits]
    return [e for edits in edit.changes.values() for e in edits]


async def test_one_line_change_in_a_long_file_sends_one_small_edit(lsp, tmp_path):
    src = tmp_path / "long.py"
    text = "".join(f"value_{i} = {i}\n" for i in range(100))
    src.write_text(text, encoding="utf-8")
    script = [
        {
            "tool_calls": [
                {
                    "name": "edit",
                    "arguments": {
                        "path": "long.py",
                        "old_text": "value_50 = 50",
                        "new_text": "value_50 = 5000",
                    },
                }
            ]
        },
        {"text": "changed"},
    ]
    disk = EditorDisk()
    states: list[str] = []
    with FakeModel(script=script) as fake:
        client = await lsp.start(
            tmp_path,
            env={"NDOMO_BASE_URL": fake.url},
            init_options={"open_transcript": False},
            handlers={
                types.WORKSPACE_APPLY_EDIT: lambda p: disk.handler(p),
                "ndomo/status": lambda p: states.append(
                    p["state"] if isinstance(p, dict) else p.state
                ),
            },
        )
        uri = disk.open(client, src, text, version=7)
        summary = await command(
            client, "ndomo.turn", {"prompt": "bump", "agent": "craftsman", "mode": "autopilot"}
        )
        assert summary["status"] == "done", summary
        await wait_for(lambda: states and states[-1] == "", what="status cleared after the turn")
    # the status said in words what the craftsman was doing, and is cleared afterwards
    assert "craftsman: 1 of 2 files changed" in states
    (request,) = disk.requests
    (edit,) = _sent_edits(request.edit)
    assert edit.range.start.line == 50 and edit.range.end.line == 51
    assert edit.new_text == "value_50 = 5000\n"
    if request.edit.document_changes:  # still version-checked
        assert request.edit.document_changes[0].text_document.version == 7
    assert disk.buffers[uri][1] == text.replace("value_50 = 50\n", "value_50 = 5000\n")


@pytest.mark.parametrize("saves", [True, False], ids=["saveDocuments", "write-through"])
async def test_bash_after_an_edit_reads_the_edited_text(lsp, tmp_path, saves):
    """The editor keeps the agent's edits in unsaved buffers; before `bash` runs they reach
    the disk: through `ndomo/saveDocuments` when the client offers it, else written by the server."""
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
        {"tool_calls": [{"name": "bash", "arguments": {"command": "cat app.py"}}]},
        {"text": "ran"},
    ]
    disk = EditorDisk()
    disk.autosave = False
    handlers = {types.WORKSPACE_APPLY_EDIT: lambda p: disk.handler(p)}
    if saves:
        handlers["ndomo/saveDocuments"] = lambda p: disk.save_documents(p)
    with FakeModel(script=script) as fake:
        client = await lsp.start(
            tmp_path,
            env={"NDOMO_BASE_URL": fake.url},
            init_options={"open_transcript": False},
            handlers=handlers,
            experimental=SAVE if saves else None,
        )
        disk.client = client
        summary = await command(
            client,
            "ndomo.turn",
            {"prompt": "fix and check", "agent": "craftsman", "mode": "autopilot"},
        )
        assert summary["status"] == "done", summary
        bash_result = fake.chat_requests()[2]["body"]["messages"][-1]["content"]
    assert "x = 2" in bash_result, bash_result
    assert src.read_text(encoding="utf-8") == "x = 2\n"
    uri = from_fs_path(str(src))
    assert disk.save_requests == ([[uri]] if saves else [])
