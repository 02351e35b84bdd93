"""Files the server owns (plan views, transcripts) while an editor has them open: they
change through `workspace/applyEdit`, and saving a stale view never reverts a change made
elsewhere."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types

from ndomo.store.store import PlanStore
from tests.e2e.conftest import command
from tests.e2e.editor_support import EditorDisk, seed_plan, wait_for
from tests.fakes.fake_model import FakeModel


async def _status(workspace, task_id: int) -> str:
    store = await PlanStore.open(workspace / ".ndomo" / "ndomo.db", workspace=workspace)
    try:
        return (await store.get_task(task_id)).status
    finally:
        await store.close()


async def _view_open_in_editor(lsp, workspace: Path):
    """An editor with a two-task plan's view open: (disk, client, view path, its text as
    opened, uri, task ids)."""
    disk = EditorDisk()
    client = await lsp.start(
        workspace, handlers={types.WORKSPACE_APPLY_EDIT: lambda p: disk.handler(p)}
    )
    slug, tasks = await seed_plan(workspace, [{"description": "one"}, {"description": "two"}])
    view_path = workspace / ".ndomo" / "plans" / f"{slug}.md"
    await wait_for(lambda: view_path.exists(), what="the view")
    text = view_path.read_text(encoding="utf-8")
    return disk, client, view_path, text, disk.open(client, view_path, text), tasks


async def test_open_plan_view_changes_through_the_editor(lsp, tmp_path):
    disk, client, _, _, uri, (_, t2) = await _view_open_in_editor(lsp, tmp_path)
    await command(client, "ndomo.task.status", {"id": t2, "status": "done"})
    await wait_for(
        lambda: "- [x] 2." in disk.buffers[uri][1], what="the open view updated in the editor"
    )
    (request,) = [r for r in disk.requests if r.edit.document_changes or r.edit.changes]
    edits = [e for c in (request.edit.document_changes or []) for e in c.edits] or list(
        request.edit.changes[uri]
    )
    assert all(
        "1. one" not in e.new_text for e in edits
    )  # only the changed lines, not the whole view


async def test_saving_a_stale_view_does_not_revert_other_changes(lsp, tmp_path):
    """The editor's copy of the view is stale (it refused the update); the user ticks task 1
    and saves: task 1 becomes done, task 2 — done elsewhere meanwhile — stays done."""
    disk, client, view_path, stale, uri, (t1, t2) = await _view_open_in_editor(lsp, tmp_path)
    disk.refuse = True  # the buffer keeps its old text
    await command(client, "ndomo.task.status", {"id": t2, "status": "done"})
    await wait_for(lambda: disk.requests, what="the server tried to update the open view")
    assert "- [ ] 2." in disk.buffers[uri][1]

    disk.refuse = False
    edited = stale.replace("- [ ] 1.", "- [x] 1.")
    disk.type_into(uri, edited)
    view_path.write_text(edited, encoding="utf-8")
    client.text_document_did_save(
        types.DidSaveTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=uri), text=edited
        )
    )
    await wait_for(
        lambda: "- [x] 1." in disk.buffers[uri][1] and "- [x] 2." in disk.buffers[uri][1],
        what="view merged",
    )
    assert await _status(tmp_path, t1) == "done"
    assert await _status(tmp_path, t2) == "done"


async def test_open_session_export_follows_the_conversation_in_the_editor(lsp, tmp_path):
    """The transcript is an export now (issue 17); an editor that has it open gets the refreshed
    export through its buffer, so the buffer never goes stale."""
    disk = EditorDisk()
    with FakeModel(script=[{"text": "first"}, {"text": "second"}]) as fake:
        client = await lsp.start(
            tmp_path,
            env={"NDOMO_BASE_URL": fake.url},
            init_options={"open_transcript": False},
            handlers={types.WORKSPACE_APPLY_EDIT: lambda p: disk.handler(p)},
        )
        turn = {"prompt": "hi", "agent": "craftsman", "mode": "discussion"}
        first = await command(client, "ndomo.turn", turn)
        exported = await command(client, "ndomo.session.export", {"session": first["session"]})
        path = Path(exported["path"])
        uri = disk.open(client, path, path.read_text(encoding="utf-8"))
        await command(client, "ndomo.turn", {**turn, "prompt": "again"})
        await command(client, "ndomo.session.export", {"session": first["session"]})
    await wait_for(lambda: "again" in disk.buffers[uri][1], what="the open export got the new turn")
    assert disk.buffers[uri][1] == path.read_text(encoding="utf-8")
    assert "second" in disk.buffers[uri][1]


async def test_incremental_changes_are_what_the_server_reads_and_versions(
    lsp, tmp_path, client_name
):
    """With Incremental sync the editor sends only the changed range: the user ticks one box
    (a one-character change) and saves without sending the text; the server's copy — built
    from the ranges — is what it reads, and its next edit carries the version those changes
    reached (a stale version would be refused by the editor)."""
    disk, client, view_path, text, uri, (t1, t2) = await _view_open_in_editor(lsp, tmp_path)
    line = next(i for i, ln in enumerate(text.split("\n")) if ln.startswith("- [ ] 1."))
    tick = types.TextEdit(
        range=types.Range(
            start=types.Position(line=line, character=3),
            end=types.Position(line=line, character=4),
        ),
        new_text="x",
    )
    disk.edit_into(uri, [tick])
    view_path.write_text(disk.buffers[uri][1], encoding="utf-8")
    client.text_document_did_save(
        types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    await wait_for(lambda: disk.requests, what="the view updated after the save")
    assert await _status(tmp_path, t1) == "done"

    await command(client, "ndomo.task.status", {"id": t2, "status": "done"})
    await wait_for(lambda: "- [x] 2." in disk.buffers[uri][1], what="the next update applied")
    assert "- [x] 1." in disk.buffers[uri][1]
    versions = [
        c.text_document.version
        for r in disk.requests
        for c in r.edit.document_changes or []
        if isinstance(c, types.TextDocumentEdit)
    ]
    if client_name == "visual-studio-code":  # Neovim's profile has no versioned edits
        assert versions and all(v is not None and v >= 2 for v in versions)
