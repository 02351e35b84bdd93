"""Every file change a turn makes goes through here: recorded, applied by the Host, undoable.

Tools call `change_file`; the craftsman's scope guard (agents/scope.py) and `ndomo.undo`
(features/undo.py) put recorded files back with `restore_files`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from ndomo.runtime.context import TurnContext
from ndomo.runtime.host import EditOutcome, Host
from ndomo.security.paths import workspace_name

if TYPE_CHECKING:
    from ndomo.store.models import TurnEdit


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
            await store.add_turn_edit(
                ctx.turn_id, workspace_name(path, ctx.roots), before, new_text
            )
    return outcome


async def save_turn_edits(ctx: TurnContext) -> None:
    """Before a shell command runs, the files the whole turn (delegations included) edited
    are saved, so `bash` sees what the editor shows, not the text before the edit."""
    top = ctx
    while top.parent is not None:
        top = top.parent
    if top.modified:
        await ctx.host.save_edited(list(top.modified))


def text_before(edits: Iterable[TurnEdit]) -> dict[str, str | None]:
    """path → its text before the first of `edits` (None: the file did not exist)."""
    out: dict[str, str | None] = {}
    for e in edits:
        out.setdefault(e.path, e.before)
    return out


async def restore_files(
    host: Host,
    root: Path,
    texts: Mapping[str, str | None],
    current: Mapping[str, str | None] | None = None,
) -> tuple[list[str], dict[str, str]]:
    """Put each file back to its text in `texts` (None: absent) through the Host — in an
    editor an applyEdit the user can undo — based on what it holds now (`current`, read when
    not given). A file already so counts as restored. Returns (restored, path → why not)."""
    restored: list[str] = []
    failed: dict[str, str] = {}
    for path, text in texts.items():
        target = root / path
        now = current[path] if current is not None else await host.read_text(target)
        if now == text:
            restored.append(path)
            continue
        outcome = await host.apply_edit(target, text, now)
        if outcome.applied:
            restored.append(path)
        else:
            failed[path] = outcome.reason
    return restored, failed
