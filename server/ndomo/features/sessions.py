"""Sessions as people find and read them: listed, opened in an editor's conversation view
(with its history) or exported to markdown. Built from the stored turns and messages, never
from a live log."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict, Field, StrictBool, ValidationError

from ndomo.actions import ActionError, action, store_of
from ndomo.app import App
from ndomo.runtime.events import FileDiff, Status, TurnSelection
from ndomo.runtime.runtime import Runtime
from ndomo.schema import Schema
from ndomo.store.models import Session

SHOWN_RESULT = 4000  # characters of a tool result an editor gets back (the store keeps all)


class SessionListParams(Schema):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)
    limit: int = Field(default=50, ge=1, le=1000, description="at most this many rows (1-1000)")
    open_only: StrictBool = Field(default=False, description="only sessions that are not ended")


@action("session.list", SessionListParams, summary="List sessions (newest first)", read_only=True)
async def session_list(app: App, p: SessionListParams) -> list[Session]:
    async with store_of(app) as s:
        return await s.list_sessions(p.limit, open_only=p.open_only)


class ChatItem(Schema):
    kind: Literal["text", "tool"]
    text: str = ""  # kind text: what the model said
    call_id: str | None = None  # kind tool
    name: str | None = None
    arguments: dict[str, Any] = Field(default_factory=dict)
    result: str | None = None
    # kind tool: done, failed, refused or cancelled as the turn saw it (None: stored before
    # statuses were, or no result yet)
    status: str | None = None
    # kind tool, as its tool_finished event and decision event had them (None: none, or
    # stored before they were): how its approval was decided, the sandbox its command ran
    # in, the diffs of the files it changed
    decision: str | None = None
    sandbox: str | None = None
    files: list[FileDiff] | None = None


class ChatTurn(Schema):
    id: int
    prompt: str
    agent: str | None = None
    mode: str | None = None
    status: str
    error: str | None = None  # the failure, or the hand-back's reason (status blocked)
    started_at: str
    # a code action's turn: the file, lines and text it is about (turn_started's selection)
    selection: TurnSelection | None = None
    items: list[ChatItem] = Field(default_factory=list)


class SessionView(Schema):
    session: str
    title: str | None = None
    status: Status
    turns: list[ChatTurn]
    more: int = 0  # older turns not included


async def conversation(app: App, session_id: str, limit: int = 50) -> tuple[list[ChatTurn], int]:
    """The session's top-level turns in order, each with what was said and done; the last
    `limit` of them and how many older ones were left out."""
    store = await app.store()
    turns = [
        t for t in await store.list_turns(session_id, limit=1_000_000) if t.parent_turn_id is None
    ]
    by_id: dict[int, ChatTurn] = {
        t.id: ChatTurn(
            id=t.id,
            prompt=t.prompt or "",
            agent=t.agent,
            mode=t.mode,
            status=t.status,
            error=t.error,
            started_at=t.started_at,
            selection=_selection(t.selection),
        )
        for t in turns
    }
    calls: dict[str, ChatItem] = {}
    for m in await store.session_messages(session_id):
        turn = by_id.get(m.turn_id) if m.turn_id is not None else None
        if turn is None:
            continue
        if m.role == "assistant":
            if m.content:
                turn.items.append(ChatItem(kind="text", text=m.content))
            for c in m.tool_calls:
                item = ChatItem(
                    kind="tool", call_id=c["id"], name=c["name"], arguments=c.get("arguments") or {}
                )
                calls[c["id"]] = item
                turn.items.append(item)
        elif m.role == "tool" and m.tool_call_id in calls:
            text = m.content or ""
            if len(text) > SHOWN_RESULT:
                text = (
                    text[:SHOWN_RESULT]
                    + f"\n[… {len(m.content or '') - SHOWN_RESULT} more characters]"
                )
            item = calls[m.tool_call_id]
            item.result = text
            item.status = m.status
            details = m.details or {}
            item.decision = _text(details.get("decision"))
            item.sandbox = _text(details.get("sandbox"))
            item.files = _files(details.get("files"))
    ordered = list(by_id.values())
    more = max(0, len(ordered) - limit)
    return ordered[more:], more


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _selection(value: Any) -> TurnSelection | None:
    """A stored selection; None for none or one that no longer reads as one."""
    try:
        return TurnSelection.model_validate(value) if isinstance(value, dict) else None
    except ValidationError:
        return None


def _files(value: Any) -> list[FileDiff] | None:
    if not isinstance(value, list):
        return None
    out = []
    for f in value:
        try:
            out.append(FileDiff.model_validate(f))
        except ValidationError:
            continue  # a row this version does not read: the card shows the rest
    return out or None


def render_markdown(view: SessionView) -> str:
    """The export: one heading per turn, the prompt, tool calls with results, the answer."""
    out = [f"# ndomo session {view.session}\n"]
    if view.title:
        out.append(f"{view.title}\n")
    for t in view.turns:
        out.append(
            f"\n## {t.started_at} · {t.agent} · {t.mode} · {t.status}\n\n**prompt:** {t.prompt}\n"
        )
        for item in t.items:
            if item.kind == "text":
                out.append(f"\n{item.text.rstrip()}\n")
            else:
                out.append(f"\n- `{item.name}` {item.arguments}\n")
                if item.result is not None:
                    body = item.result.rstrip().replace("\n", "\n    ")
                    out.append(f"\n    {body}\n")
        if t.error:
            label = "handed back" if t.status == "blocked" else "error"
            out.append(f"\n_{label}: {t.error}_\n")
    return "".join(out)


class OpenParams(Schema):
    model_config = ConfigDict(extra="forbid")
    session: str | None = Field(default=None, description="Session id (default: the current one).")
    limit: int = Field(
        default=50, ge=1, le=10_000, description="How many of the latest turns to return."
    )


async def _view(app: App, session: str | None, limit: int, *, switch: bool) -> SessionView:
    rt = Runtime.of(app)
    if session is not None:
        store = await app.store()
        from ndomo.store.errors import StoreError

        try:
            row = await store.get_session(session)
        except StoreError:
            raise ActionError(
                f"no session {session!r}; `ndomo session list` shows them", field="session"
            ) from None
    state = await rt.session(session)
    if switch:
        await rt.open_session(state.id)
    turns, more = await conversation(app, state.id, limit)
    row = await (await app.store()).get_session(state.id)
    return SessionView(
        session=state.id, title=row.title, status=await rt.status(state), turns=turns, more=more
    )


def _render_view(view: Any) -> str:
    return render_markdown(SessionView.model_validate(view))


@action(
    "session.open",
    OpenParams,
    render=_render_view,
    summary="Make a session the current one (the latest for `ndomo run`) and return its conversation",
    read_only=True,
)
async def session_open(app: App, p: OpenParams) -> SessionView:
    return await _view(app, p.session, p.limit, switch=True)


class ExportParams(Schema):
    model_config = ConfigDict(extra="forbid")
    session: str | None = Field(default=None, description="Session id (default: the current one).")
    path: str | None = Field(
        default=None, description="Where to write (default .ndomo/sessions/<id>.md)."
    )


class Exported(Schema):
    session: str
    path: str
    turns: int


@action(
    "session.export",
    ExportParams,
    summary="Write a session's whole conversation to a markdown file",
    read_only=True,
)
async def session_export(app: App, p: ExportParams) -> Exported:
    view = await _view(app, p.session, 1_000_000, switch=False)
    target = (
        Path(p.path).expanduser() if p.path else app.state_dir / "sessions" / f"{view.session}.md"
    )
    if not target.is_absolute():
        target = app.root / target
    text = render_markdown(view)

    def write() -> None:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")

    # An editor that has the export open gets it through its buffer (lsp/host.py: write_owned), so the
    # buffer never goes stale; elsewhere (the CLI) the file is written.
    owned = app.owned_writer
    try:
        if owned is None or not await owned(target, text):
            await asyncio.to_thread(write)
    except OSError as exc:
        raise ActionError(
            f"cannot write {target}: {exc.strerror or exc}", field="path", kind="failed"
        ) from None
    return Exported(session=view.session, path=str(target), turns=len(view.turns))
