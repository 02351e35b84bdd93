"""Shared helpers for the editor tests (no tests here): a client-side applyEdit that writes
to disk, waiting on diagnostics, and a plan seeded straight into the workspace's store."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.uris import from_fs_path, to_fs_path

from ndomo.store.models import PlanCreate, TaskCreate
from ndomo.store.store import PlanStore


def _offset(text: str, pos: types.Position) -> int:
    lines = text.split("\n")
    line = min(pos.line, len(lines) - 1)
    return sum(len(x) + 1 for x in lines[:line]) + min(pos.character, len(lines[line]))


def apply_text_edits(text: str, edits: list) -> str:
    for e in sorted(
        edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True
    ):
        text = (
            text[: _offset(text, e.range.start)] + e.new_text + text[_offset(text, e.range.end) :]
        )
    return text


class EditorDisk:
    """The client's applyEdit, like an editor: open buffers are edited (and a didChange sent),
    the result is saved to disk; every request is recorded; `refuse` answers applied: false."""

    def __init__(self) -> None:
        self.requests: list[types.ApplyWorkspaceEditParams] = []
        self.refuse = False
        self.client = None
        self.buffers: dict[str, tuple[int, str]] = {}  # uri → (version, text) of open documents
        # False: like an editor without auto-save, edits stay in (opened) buffers until saved
        self.autosave = True
        self.save_requests: list[list[str]] = []

    def open(self, client, path: Path, text: str, version: int = 1) -> str:
        self.client = client
        uri = from_fs_path(str(path))
        self.buffers[uri] = (version, text)
        client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=uri, language_id="python", version=version, text=text
                )
            )
        )
        return uri

    def type_into(self, uri: str, text: str) -> None:
        """The user edits an open buffer (sent as the whole new text, which Incremental
        sync allows too)."""
        version = self.buffers[uri][0] + 1
        self.buffers[uri] = (version, text)
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )

    def edit_into(self, uri: str, edits: list) -> None:
        """Apply `edits` to an open buffer and send only the changed ranges, as an editor
        does with Incremental sync: last edit first, so each range is still valid when it
        is applied."""
        version, text = self.buffers[uri]
        ordered = sorted(
            edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True
        )
        self.buffers[uri] = (version + 1, apply_text_edits(text, edits))
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version + 1),
                content_changes=[
                    types.TextDocumentContentChangePartial(range=e.range, text=e.new_text)
                    for e in ordered
                ],
            )
        )

    def _edit_file(self, uri: str, edits: list) -> None:
        path = Path(to_fs_path(uri))
        if not self.autosave:
            if uri not in self.buffers:  # the editor loads the file into a buffer and edits that
                self.open(
                    self.client, path, path.read_text(encoding="utf-8") if path.exists() else ""
                )
            self.edit_into(uri, edits)
            return
        if uri in self.buffers:
            self.edit_into(uri, edits)
            new = self.buffers[uri][1]
        else:
            new = apply_text_edits(path.read_text(encoding="utf-8") if path.exists() else "", edits)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(new, encoding="utf-8")

    def save_documents(self, params: Any) -> dict:
        """`ndomo/saveDocuments`: save the open buffers named, answer which were saved."""
        uris = list(params["uris"] if isinstance(params, dict) else params.uris)
        self.save_requests.append(uris)
        saved = []
        for uri in uris:
            if uri in self.buffers:
                Path(to_fs_path(uri)).write_text(self.buffers[uri][1], encoding="utf-8")
                saved.append(uri)
        return {"saved": saved}

    def handler(self, params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        self.requests.append(params)
        if self.refuse:
            return types.ApplyWorkspaceEditResult(
                applied=False, failure_reason="user rejected the edit"
            )
        edit = params.edit
        for change in edit.document_changes or []:
            if isinstance(change, types.TextDocumentEdit):
                uri = change.text_document.uri
                if uri in self.buffers and change.text_document.version not in (
                    None,
                    self.buffers[uri][0],
                ):
                    return types.ApplyWorkspaceEditResult(
                        applied=False, failure_reason="version mismatch"
                    )
                self._edit_file(uri, change.edits)
            elif isinstance(change, types.CreateFile):
                path = Path(to_fs_path(change.uri))
                path.parent.mkdir(parents=True, exist_ok=True)
                path.touch()
            elif isinstance(change, types.DeleteFile):
                Path(to_fs_path(change.uri)).unlink(missing_ok=True)
        for uri, edits in (edit.changes or {}).items():
            self._edit_file(uri, edits)
        return types.ApplyWorkspaceEditResult(applied=True)


async def wait_for(
    predicate: Callable[[], Any], timeout: float = 10.0, what: str = "condition"
) -> Any:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


async def seed_plan(
    workspace: Path, tasks: list[dict], *, title: str = "Tidy the parser"
) -> tuple[str, list[int]]:
    """Create a plan with tasks through a separate store connection; returns (slug, task ids)."""
    store = await PlanStore.open(workspace / ".ndomo" / "ndomo.db", workspace=workspace)
    try:
        plan = await store.create_plan(PlanCreate(title=title, overview="make it tidy"))
        batch = await store.create_tasks(plan.id, [TaskCreate(**t) for t in tasks])
        return plan.slug, [t.id for t in batch.tasks]
    finally:
        await store.close()


def structure_code_actions(client) -> None:
    """lsprotocol 2025 reads a CodeAction that carries a command as a bare Command: fix the
    client's converter to pick Command only when `command` is a string."""
    from collections.abc import Sequence
    from typing import Optional, Union

    converter = client.protocol._converter

    def hook(obj: Any, _: Any) -> Any:
        if isinstance(obj, dict) and isinstance(obj.get("command"), str):
            return converter.structure(obj, types.Command)
        return converter.structure(obj, types.CodeAction)

    # cattrs looks hooks up by the exact typing object lsprotocol's annotations use (typing.Union)
    converter.register_structure_hook(Union[types.Command, types.CodeAction], hook)  # noqa: UP007 - must equal lsprotocol's typing.Union key
    for t in (Optional[Sequence[types.Command | types.CodeAction]],):  # noqa: UP045 - same: lsprotocol's Optional key
        converter.register_structure_hook(
            t, lambda obj, _: None if obj is None else [hook(o, None) for o in obj]
        )


async def code_actions(client, params: types.CodeActionParams) -> list:
    structure_code_actions(client)
    return await client.text_document_code_action_async(params)
