"""`ndomo.undo`: put back what the session's last editing turn changed.

The turn's recorded edits are replayed backwards through the Host (in an editor: an
applyEdit the user can undo again). A file changed since the turn is not overwritten
unless `force`. The undo is itself recorded as a turn (agent `undo`, prompt `undo turn N`)
so a second undo goes one turn further back and the record stays complete.
"""

from __future__ import annotations

from pydantic import ConfigDict, Field, StrictBool

from ndomo.actions import ActionError, action
from ndomo.app import App
from ndomo.runtime.edits import restore_files, text_before
from ndomo.runtime.host import BaseHost, Host
from ndomo.schema import Schema
from ndomo.store.models import Turn, TurnEdit

UNDO_AGENT = "undo"
_PREFIX = "undo turn "


class UndoParams(Schema):
    model_config = ConfigDict(extra="forbid")
    force: StrictBool = Field(default=False, description="Overwrite files changed since the turn")
    session: str | None = Field(default=None, description="Session id (the current one if unset).")


class UndoResult(Schema):
    turn_id: int | None
    restored: list[str] = []
    failed: list[str] = []
    message: str


class UndoRefused(Exception):
    def __init__(self, message: str, files: list[str]) -> None:
        super().__init__(message)
        self.files = files


def _undone_by(turn: Turn) -> int | None:
    if turn.agent == UNDO_AGENT and turn.prompt and turn.prompt.startswith(_PREFIX):
        try:
            return int(turn.prompt[len(_PREFIX) :].split()[0])
        except (ValueError, IndexError):
            return None
    return None


async def last_undoable_turn(store, session_id: str) -> tuple[Turn, list[TurnEdit]] | None:
    """The newest turn with edits that is neither an undo nor already undone."""
    turns = await store.list_turns(session_id, limit=1_000_000)
    undone = {t for t in (_undone_by(x) for x in turns) if t is not None}
    for turn in reversed(turns):
        if turn.agent == UNDO_AGENT or turn.id in undone:
            continue
        edits = await store.turn_edits(turn.id)
        if edits:
            return turn, edits
    return None


def net_changes(edits: list[TurnEdit]) -> dict[str, tuple[str | None, str | None]]:
    """path → (text before the turn's first edit, text after its last)."""
    after = {e.path: e.after for e in edits}
    return {path: (before, after[path]) for path, before in text_before(edits).items()}


async def undo_last_turn(
    app: App, host: Host, session_id: str, *, force: bool = False
) -> UndoResult:
    store = await app.store()
    found = await last_undoable_turn(store, session_id)
    if found is None:
        return UndoResult(turn_id=None, message="nothing to undo in this session")
    turn, edits = found
    changes = net_changes(edits)
    current = {path: await host.read_text(app.root / path) for path in changes}
    changed = sorted(p for p, (_, after) in changes.items() if current[p] != after)
    if changed and not force:
        raise UndoRefused(
            f"not undoing turn {turn.id}: changed since: {', '.join(changed)} (use force to overwrite)",
            changed,
        )
    record = await store.start_turn(session_id, UNDO_AGENT, None, f"{_PREFIX}{turn.id}")
    texts = {path: before for path, (before, _) in changes.items()}
    restored, refused = await restore_files(host, app.root, texts, current)
    for path in restored:
        await store.add_turn_edit(record.id, path, current[path], texts[path])
    failed = [f"{path}: {why}" for path, why in refused.items()]
    await store.finish_turn(
        record.id, "failed" if failed else "done", error="; ".join(failed) or None
    )
    msg = f"undid turn {turn.id}: restored {', '.join(restored) or 'nothing'}"
    if failed:
        msg += f"; not restored: {'; '.join(failed)}"
    return UndoResult(turn_id=turn.id, restored=restored, failed=failed, message=msg)


@action(
    "undo",
    UndoParams,
    summary="Undo the file changes of the session's last turn (force: overwrite later changes)",
)
async def undo(app: App, p: UndoParams) -> UndoResult:
    from ndomo.runtime.runtime import Runtime

    session = await Runtime.of(app).session(p.session)
    host = app.host_factory() if app.host_factory else BaseHost()
    try:
        return await undo_last_turn(app, host, session.id, force=p.force)
    except UndoRefused as exc:
        raise ActionError(str(exc), field="force", kind="failed") from None
