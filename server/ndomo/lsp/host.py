"""LspHost: a turn's edits, questions and approvals go through the editor.

Open buffers are what tools read; edits are version-checked `workspace/applyEdit`s that
the user can undo in the editor; `applied: false` means nothing was written. Server-owned
files (plan views, session exports) change the same way when open (`write_owned`).
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types
from pydantic import ValidationError
from pygls.uris import from_fs_path, to_fs_path

from ndomo.lsp import protocol
from ndomo.lsp.text_edits import text_edits
from ndomo.runtime.events import TextDelta, TurnEvent
from ndomo.runtime.host import (
    REASON_CHARS,
    ApprovalChoice,
    ApprovalRequest,
    BaseHost,
    EditOutcome,
    write_atomic,
)
from ndomo.runtime.problems import Problem
from ndomo.security.text import cap, for_message, one_line, strip_osc, visible

if TYPE_CHECKING:
    from ndomo.app import App
    from ndomo.lsp.server import NdomoServer

log = logging.getLogger("ndomo.lsp")

# Button titles: short, so an editor's notification shows them in full (VS Code cuts
# "Allow for this session" to "Allow f…" at common widths); the message says what each means.
APPROVAL_CHOICES: dict[str, ApprovalChoice] = {
    "Once": "once",
    "Session": "session",
    "Always": "project",
    "Deny": "deny",
    "Never": "never",
}
CONTROL_CHOICES = ("Once", "Deny")  # a control file is asked every time: nothing is saved
SUBJECT_SHOWN = 4000  # characters of the subject `ndomo/approve` carries (a script, a patch)


SAVE_TIMEOUT_S = 30.0  # an editor that never answers must not hold the shell command forever

DIAGNOSTICS_SETTLE_S = 0.8  # the other servers re-check the edited file meanwhile
DIAGNOSTICS_TIMEOUT_S = 5.0  # an editor that never answers costs the edit this much, once
DIAGNOSTICS_PER_FILE = 50  # what a file's answer is read up to

# After a text delta is sent, later ones are merged for this long: one notification per
# delta (hundreds a second from a fast model) would queue the editor's requests behind them
# on the same stdout. The first delta of a quiet stream goes out at once (first token).
TEXT_FLUSH_S = 0.05


class LspHost(BaseHost):
    def __init__(self, server, app=None) -> None:
        super().__init__()
        self.server = server
        self.app = app  # the folder's App this host's turn runs in (its settings apply)
        self._text: list[str] = []  # deltas not sent yet, all of turn `_text_turn`
        self._text_turn: int | None = None
        self._flush_handle: asyncio.TimerHandle | None = None
        self._applied: dict[Path, str | None] = {}  # path → the text the last applied edit left

    # -- capabilities --------------------------------------------------------------------
    def _ws_edit_caps(self):
        caps = self.server.client_capabilities
        ws = caps.workspace if caps else None
        return ws.workspace_edit if ws else None

    def supports_document_changes(self) -> bool:
        we = self._ws_edit_caps()
        return bool(we and we.document_changes)

    def supports_annotations(self) -> bool:
        we = self._ws_edit_caps()
        return bool(we and we.document_changes and we.change_annotation_support)

    def _review(self) -> bool:
        """`review_edits`: the editor asks the user to confirm each edit before applying it."""
        app = self.app if self.app is not None else self.server.app
        return bool(app is not None and app.settings.review_edits and self.supports_annotations())

    def supports(self, op: types.ResourceOperationKind) -> bool:
        we = self._ws_edit_caps()
        return bool(we and we.resource_operations and op in we.resource_operations)

    def _encoding(self) -> str:
        enc = self.server.workspace.position_encoding
        return enc or types.PositionEncodingKind.Utf16

    # -- Host ------------------------------------------------------------------------------
    async def emit(self, event: TurnEvent) -> None:
        """Send the event; consecutive text deltas of one turn go out merged, in order.

        Events are not kept (`events` stays empty): the editor has them, and a long-lived
        server must not grow with every delta.
        """
        if event.kind == "thought":
            return  # the chat views show answers only: reasoning is ACP's (agent_thought_chunk)
        if event.kind == "text":
            if self._text and self._text_turn != event.turn_id:
                self.flush_text()
            self._text.append(event.text)  # type: ignore[attr-defined]  # kind "text" is a TextDelta (events load with the App)
            self._text_turn = event.turn_id
            if self._flush_handle is None:  # nothing sent lately: this one now, merge what follows
                self._send_text()
                self._flush_handle = asyncio.get_running_loop().call_later(
                    TEXT_FLUSH_S, self._window_end
                )
        else:
            self.flush_text()  # text before a tool call / the end is sent before it
            self.server.protocol.notify(protocol.TURN_EVENT, protocol.turn_event_params(event))

    def flush_text(self) -> None:
        """Send the buffered text deltas as one `text` event (no-op when none)."""
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None
        self._send_text()

    def _window_end(self) -> None:
        """The merge window closed: send what gathered and keep merging while the stream
        flows; a window that gathered nothing ends, so the next delta goes out at once."""
        self._flush_handle = None
        if self._text:
            self._send_text()
            self._flush_handle = asyncio.get_running_loop().call_later(
                TEXT_FLUSH_S, self._window_end
            )

    def _send_text(self) -> None:
        if not self._text:
            return
        text, self._text = "".join(self._text), []
        merged = TextDelta(turn_id=self._text_turn, text=text)
        self.server.protocol.notify(protocol.TURN_EVENT, protocol.turn_event_params(merged))
        # out now, not after the step (ndomo.lsp.stdout): the step may go on reading the
        # answer's next chunks, and the first token would wait for them
        flush = getattr(getattr(self.server.protocol, "writer", None), "flush", None)
        if flush is not None:
            flush()

    def _open_doc(self, path: Path):
        uri = from_fs_path(str(path))
        docs = self.server.workspace.text_documents
        return docs.get(uri)

    async def read_text(self, path: Path) -> str | None:
        doc = self._open_doc(path)
        if doc is not None:
            return doc.source
        return await super().read_text(path)

    async def _apply_edit(
        self, path: Path, new_text: str | None, old_text: str | None
    ) -> EditOutcome:
        uri = from_fs_path(str(path))
        doc = self._open_doc(path)
        current = doc.source if doc is not None else await super().read_text(path)
        if old_text is not None and current != old_text:
            return EditOutcome(applied=False, reason=f"{path.name} changed since it was read")
        exists = current is not None
        if new_text is None and not exists:
            return EditOutcome(applied=True)
        changes: list = []
        if new_text is None:
            if not self.supports(types.ResourceOperationKind.Delete):
                if doc is not None:
                    return EditOutcome(
                        applied=False, reason="the editor cannot delete an open file"
                    )
                await asyncio.to_thread(write_atomic, path, None)
                return EditOutcome(applied=True)
            changes.append(types.DeleteFile(uri=uri, kind="delete"))
        elif current is None:
            if not self.supports(types.ResourceOperationKind.Create):
                await asyncio.to_thread(write_atomic, path, new_text)  # nothing open to go behind
                return EditOutcome(applied=True)
            await asyncio.to_thread(path.parent.mkdir, parents=True, exist_ok=True)
            changes.append(
                types.CreateFile(
                    uri=uri,
                    kind="create",
                    options=types.CreateFileOptions(overwrite=False, ignore_if_exists=True),
                )
            )
            changes.append(
                types.TextDocumentEdit(
                    text_document=types.OptionalVersionedTextDocumentIdentifier(
                        uri=uri, version=None
                    ),
                    edits=[
                        types.TextEdit(
                            range=types.Range(
                                start=types.Position(line=0, character=0),
                                end=types.Position(line=0, character=0),
                            ),
                            new_text=new_text,
                        )
                    ],
                )
            )
        else:
            edits = text_edits(current, new_text, self._encoding())
            if not edits:
                return EditOutcome(applied=True)  # nothing to change
            version = doc.version if doc is not None else None
            if self.supports_document_changes():
                changes.append(
                    types.TextDocumentEdit(
                        text_document=types.OptionalVersionedTextDocumentIdentifier(
                            uri=uri, version=version
                        ),
                        edits=edits,
                    )
                )
            else:
                return await self._send(types.WorkspaceEdit(changes={uri: edits}), path)
        return await self._send(types.WorkspaceEdit(document_changes=changes), path)

    def _annotate(self, edit: types.WorkspaceEdit, path: Path) -> types.WorkspaceEdit:
        ann_id = "ndomo-review"
        edit.change_annotations = {
            ann_id: types.ChangeAnnotation(
                label=f"ndomo: {path.name}",
                needs_confirmation=True,
                description="review the agent's edit",
            )
        }
        for change in edit.document_changes or []:
            if isinstance(change, types.TextDocumentEdit):
                change.edits = [
                    types.AnnotatedTextEdit(
                        range=e.range, new_text=e.new_text, annotation_id=ann_id
                    )
                    if isinstance(e, types.TextEdit)
                    else e  # a snippet edit keeps its own form
                    for e in change.edits
                ]
            else:
                change.annotation_id = ann_id
        return edit

    async def apply_edit(
        self, path: Path, new_text: str | None, old_text: str | None
    ) -> EditOutcome:
        outcome = await self._apply_edit(path, new_text, old_text)
        if outcome.applied:
            self._applied[path] = new_text
        return outcome

    async def _send(self, edit: types.WorkspaceEdit, path: Path) -> EditOutcome:
        if edit.document_changes and self._review():
            edit = self._annotate(edit, path)
        try:
            result = await self.server.workspace_apply_edit_async(
                types.ApplyWorkspaceEditParams(edit=edit, label=f"ndomo: {path.name}")
            )
        except Exception as exc:  # noqa: BLE001 - any failure of the request is an edit not applied, told to the model
            log.warning("workspace/applyEdit for %s failed", path, exc_info=True)
            return EditOutcome(applied=False, reason=f"the editor did not apply the edit: {exc}")
        if not result.applied:
            return EditOutcome(
                applied=False, reason=result.failure_reason or "the editor refused the edit"
            )
        return EditOutcome(applied=True)

    async def ask(self, question: str, choices: list[str] | None = None) -> str | None:
        actions = [types.MessageActionItem(title=c) for c in (choices or ["OK"])]
        try:
            picked = await self.server.window_show_message_request_async(
                types.ShowMessageRequestParams(
                    type=types.MessageType.Info, message=question, actions=actions
                )
            )
        except Exception:  # noqa: BLE001 - a question the editor could not show has no answer
            log.warning("window/showMessageRequest failed", exc_info=True)
            return None
        return picked.title if picked else None

    async def approve(self, request: ApprovalRequest) -> ApprovalChoice:
        """The user's answer: `ndomo/approve` to a client announcing it, else a
        `window/showMessageRequest` with the short question and five (or two) buttons."""
        if self._announced("approvals"):
            return await self._approve_structured(request)
        control = request.permission == "control"
        msg = request.short()
        titles = CONTROL_CHOICES if control else tuple(APPROVAL_CHOICES)
        actions = [types.MessageActionItem(title=c) for c in titles]
        try:
            picked = await self.server.window_show_message_request_async(
                types.ShowMessageRequestParams(
                    type=types.MessageType.Info, message=msg, actions=actions
                )
            )
        except Exception as exc:  # noqa: BLE001 - an editor error is not the user's answer: the call fails, saying why
            raise RuntimeError(
                f"the editor failed to show the approval request ({type(exc).__name__}: {exc})"
            ) from exc
        title = picked.title if picked else ""  # dismissed, or a title not offered: deny
        return APPROVAL_CHOICES.get(title, "deny") if title in titles else "deny"

    async def _approve_structured(self, request: ApprovalRequest) -> ApprovalChoice:
        params = approve_params(request)
        try:
            result = await self.server.protocol.send_request_async(protocol.APPROVE, params)
        except Exception as exc:  # noqa: BLE001 - an editor error is not the user's answer: the call fails, saying why
            raise RuntimeError(
                f"the editor failed to show the approval request ({type(exc).__name__}: {exc})"
            ) from exc
        choice = protocol.approve_choice(result)
        if choice in {c["id"] for c in params["choices"]}:
            return APPROVAL_IDS[choice]
        return "deny"  # dismissed, or an answer not offered

    # -- saving what the turn edited ---------------------------------------------------------
    def supports_save_documents(self) -> bool:
        """The client announced `experimental.ndomo.saveDocuments` (our editor plugins do)."""
        return self._announced("saveDocuments")

    # -- the editor's diagnostics ------------------------------------------------------------
    def _announced(self, what: str) -> bool:
        own = protocol.client_capability(self.server.client_capabilities)
        return bool(own.get(what))

    async def problems(
        self, paths: list[Path], *, settle: bool = True
    ) -> dict[Path, list[Problem]] | None:
        """`ndomo/diagnostics` for `paths`, after `DIAGNOSTICS_SETTLE_S` when `settle`; None
        from a client that does not answer it (or failed to), so the model is told nothing."""
        if not paths or not self._announced("diagnostics"):
            return None
        if settle:
            await asyncio.sleep(DIAGNOSTICS_SETTLE_S)
        by_uri = {from_fs_path(str(p)): p for p in paths}
        try:
            result = await asyncio.wait_for(
                self.server.protocol.send_request_async(
                    protocol.DIAGNOSTICS, {"uris": list(by_uri)}
                ),
                DIAGNOSTICS_TIMEOUT_S,
            )
        except Exception as exc:  # noqa: BLE001 - no answer is no report, the edit stands
            log.warning("the editor did not report diagnostics (%s)", exc)
            return None
        return _problems(result, by_uri)

    async def save_edited(self, paths: list[Path]) -> None:
        """Ask the editor to save the edited documents (`ndomo/saveDocuments`), so the save
        stays in its undo history; whatever it did not save — or every document, with a client
        that has no such request — is written through to disk from the server's copy."""
        pending = {from_fs_path(str(p)): p for p in paths}
        if self.supports_save_documents():
            try:
                params = protocol.SaveDocumentsParams(uris=list(pending))
                result = await asyncio.wait_for(
                    self.server.protocol.send_request_async(protocol.SAVE_DOCUMENTS, params),
                    SAVE_TIMEOUT_S,
                )
                for uri in protocol.saved_uris(result):
                    pending.pop(uri, None)
            except Exception as exc:  # noqa: BLE001 — a failed save falls back to writing
                log.warning("the editor did not save the edited documents (%s); writing them", exc)
        for uri, path in pending.items():
            # What our last edit produced (the buffer's copy here may lag behind its didChange).
            doc = self.server.workspace.text_documents.get(uri)
            text = (
                self._applied.get(path)
                if path in self._applied
                else (doc.source if doc is not None else None)
            )
            if text is None:
                continue
            on_disk = await super().read_text(path)
            if on_disk is not None and on_disk != text:
                await asyncio.to_thread(write_atomic, path, text)

    async def append_owned(self, path: Path, text: str) -> None:
        await append_owned(self.server, path, text)

    async def show_document(self, path: Path) -> None:
        try:
            await self.server.window_show_document_async(
                types.ShowDocumentParams(uri=from_fs_path(str(path)), take_focus=False)
            )
        except Exception:  # noqa: BLE001 - a document the editor cannot show is not an error
            log.debug("client could not show %s", path, exc_info=True)


def _problems(result: object, by_uri: dict[str, Path]) -> dict[Path, list[Problem]] | None:
    """The editor's answer, per asked path; entries that are not diagnostics are left out."""
    answer = _plain(result)
    items = answer.get("items") if isinstance(answer, dict) else None
    if not isinstance(items, list):
        return None
    by_path = {_fs(uri): path for uri, path in by_uri.items()}
    out: dict[Path, list[Problem]] = {path: [] for path in by_uri.values()}
    for item in items:
        uri = item.get("uri") if isinstance(item, dict) else None
        found = item.get("diagnostics") if isinstance(item, dict) else None
        path = by_uri.get(uri) or by_path.get(_fs(uri)) if isinstance(uri, str) else None
        if path is None or not isinstance(found, list):
            continue
        for raw in found[:DIAGNOSTICS_PER_FILE]:
            if isinstance(raw, dict) and raw.get("source") == "ndomo":
                continue  # ndomo's own (plan tasks): not a problem in the code
            if isinstance(raw, dict):  # a long message is cut, not dropped
                raw = {
                    **raw,
                    **{
                        k: raw[k][:n]
                        for k, n in (("message", 4000), ("source", 200))
                        if isinstance(raw.get(k), str)
                    },
                }
            try:
                out[path].append(Problem.model_validate(raw))
            except ValidationError:
                continue
    return out


def _plain(value: object) -> object:
    """The answer as JSON values: pygls gives an unknown method's objects as named tuples."""
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    as_dict = getattr(value, "_asdict", None)
    if isinstance(value, tuple) and callable(as_dict):
        return {k: _plain(v) for k, v in as_dict().items()}
    return value


def _fs(uri: str) -> str | None:
    try:
        return to_fs_path(uri)
    except Exception:  # noqa: BLE001 - an unreadable uri matches nothing
        return None


def new_host(server: NdomoServer, app: App | None = None) -> LspHost:
    """The Host for one editor-started turn in `app`'s folder (default: `server.app`)."""
    return LspHost(server, app if app is not None else server.app)


# -- server-owned files: plan views and session exports open in the editor ----------------
# Written straight to disk, an open buffer of such a file goes stale, and saving the stale
# buffer writes old text back. So while a file is open its buffer is changed instead — a
# minimal, versioned `workspace/applyEdit` — and then saved: by the editor when it offers
# `ndomo/saveDocuments`, else by writing the same text to disk. Closed files are written.


def _disk(path: Path) -> str | None:
    try:
        with path.open(encoding="utf-8", newline="") as fh:
            return fh.read()
    except (FileNotFoundError, UnicodeDecodeError):
        return None


async def write_owned(server: NdomoServer, path: Path, text: str) -> bool:
    """Make `path` read `text` in the editor (if open) and on disk; False when an open
    buffer refused the change (it keeps what it had, the disk is left alone)."""
    doc = server.workspace.text_documents.get(from_fs_path(str(path)))
    if doc is None:
        if await asyncio.to_thread(_disk, path) != text:
            await asyncio.to_thread(write_atomic, path, text)
        return True
    if doc.source != text:
        host = new_host(server, server.app_for(path))
        outcome = await host.apply_edit(path, text, doc.source)
        if not outcome.applied:
            return False
        await host.save_edited([path])
    elif await asyncio.to_thread(_disk, path) != text:
        await asyncio.to_thread(write_atomic, path, text)
    return True


async def append_owned(server: NdomoServer, path: Path, text: str) -> None:
    """Append to an owned file (a transcript) without losing what the buffer or disk held."""
    doc = server.workspace.text_documents.get(from_fs_path(str(path)))
    if doc is None or not await write_owned(server, path, doc.source + text):

        def append() -> None:
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("a", encoding="utf-8") as fh:
                fh.write(text)

        await asyncio.to_thread(append)


APPROVAL_IDS: dict[str, ApprovalChoice] = {c: c for c in APPROVAL_CHOICES.values()}


def approve_params(request: ApprovalRequest) -> protocol.ApproveParams:
    """`ndomo/approve`'s params: the request's parts made inert (controls shown as escapes,
    one line each; the subject keeps its lines) and the answers, the primary one first."""
    shell = request.network is not None
    saved = one_line(request.rule or request.subject, 120)
    once = "Run once" if shell else "Allow once"
    choices = [protocol.ApprovalOption(id="once", label=once, detail="allow this call only")]
    if request.permission != "control":  # a control file is asked every time: nothing saved
        choices += [
            protocol.ApprovalOption(
                id="session", label="Session", detail=f"allow `{saved}` until the session ends"
            ),
            protocol.ApprovalOption(
                id="project", label="Always", detail=f"allow `{saved}` in this project"
            ),
        ]
    choices.append(protocol.ApprovalOption(id="deny", label="Deny", detail="refuse this call"))
    if request.permission != "control":
        choices.append(
            protocol.ApprovalOption(
                id="never", label="Never", detail="deny this exact call in this project"
            )
        )
    return protocol.ApproveParams(
        message=for_message(request.short()),
        reason=one_line(request.reason, REASON_CHARS),
        permission=one_line(request.permission, 40),
        subject=cap(visible(strip_osc(request.subject)), SUBJECT_SHOWN),
        agent=one_line(request.agent, 80),
        mode=one_line(request.mode, 40),
        rule=saved if request.permission != "control" else "",
        sandbox=one_line(request.sandbox, 120),
        network=request.network,
        destinations=[one_line(d, 200) for d in request.destinations],
        choices=choices,
    )
