"""Every file change a turn makes goes through here: recorded, applied by the Host, undoable.

Tools call `change_file`; the craftsman's scope guard calls `rollback_turn`; `ndomo.undo`
replays `turn_edits` backwards.
"""

from __future__ import annotations

from pathlib import Path

from ndomo.runtime.context import TurnContext
from ndomo.runtime.host import EditOutcome


def rel(ctx: TurnContext, path: Path) -> str:
    try:
        return path.relative_to(ctx.app.root).as_posix()
    except ValueError:
        return str(path)


_READ = object()


async def change_file(
    ctx: TurnContext, path: Path, new_text: str | None, *, before: object = _READ
) -> EditOutcome:
    """Apply one whole-file change through the Host and record it for undo.

    `before` is the text the tool based its change on (read if not given); the Host
    refuses the edit if the file changed since.
    """
    if before is _READ:
        before = await ctx.host.read_text(path)
    assert before is None or isinstance(before, str)
    outcome = await ctx.host.apply_edit(path, new_text, before)
    if outcome.applied:
        ctx.note_modified(path)
        if ctx.turn_id is not None:
            store = await ctx.app.store()
            await store.add_turn_edit(ctx.turn_id, rel(ctx, path), before, new_text)
    return outcome


async def save_turn_edits(ctx: TurnContext) -> None:
    """Before a shell command runs, the files the whole turn (delegations included) edited
    are saved, so `bash` sees what the editor shows, not the text before the edit."""
    top = ctx
    while top.parent is not None:
        top = top.parent
    if top.modified:
        await ctx.host.save_edited(list(top.modified))


async def rollback_turn(ctx: TurnContext) -> list[str]:
    """Restore every file this turn changed to its content before the turn (or absence).

    Returns the paths that could not be restored (e.g. the editor refused)."""
    if ctx.turn_id is None:
        return []
    store = await ctx.app.store()
    edits = await store.turn_edits(ctx.turn_id)
    first_before: dict[str, str | None] = {}
    last_after: dict[str, str | None] = {}
    for e in edits:
        first_before.setdefault(e.path, e.before)
        last_after[e.path] = e.after
    failed = []
    for path, before in first_before.items():
        target = ctx.app.root / path
        outcome = await ctx.host.apply_edit(target, before, last_after[path])
        if not outcome.applied:
            failed.append(path)
    return failed
