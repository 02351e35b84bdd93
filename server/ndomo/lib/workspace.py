"""Shared by the tools that name files (files, codetools): confinement, workspace-relative
names, helpful 'not found's. A library: no feature package is imported here."""

from __future__ import annotations

import asyncio
import difflib
import os
import posixpath
import stat
from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator

from ndomo.runtime.callnotes import note_changes
from ndomo.runtime.context import TurnContext
from ndomo.runtime.edits import change_file
from ndomo.runtime.tools import FileChange, ToolError
from ndomo.security.paths import PathRefused, resolve_in_workspace, workspace_name

_NEVER_WRITE = (".git",)


def no_nul(value: str) -> str:
    """A path argument holding NUL is refused when the arguments are parsed, before any guard."""
    if "\x00" in value:
        raise ValueError("holds a NUL byte (\\x00); a path never does")
    return value


PathArg = Annotated[str, AfterValidator(no_nul)]

_KINDS = {
    stat.S_IFIFO: "a FIFO",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
}


def special_kind(path: Path) -> str | None:
    """What a FIFO, socket or device is called; ``None`` for a file, folder or nothing.

    ``os.stat`` never blocks on these, where opening a FIFO to read it waits for a writer.
    """
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    return _KINDS.get(stat.S_IFMT(mode), "not a file or folder")


def resolve(ctx: TurnContext, raw: str) -> Path:
    """The model's path, confined to the workspace; a refusal becomes a readable tool error.

    A FIFO, socket or device is refused here, so no tool opens one (reading a FIFO
    blocks the turn until something writes to it, beyond cancel).
    """
    try:
        path = resolve_in_workspace(raw, ctx.roots)
    except PathRefused as exc:
        raise ToolError(f"path refused: {exc.message}") from None
    kind = special_kind(path)
    if kind is not None:
        raise ToolError(
            f"{workspace_name(path, ctx.roots)} is not a regular file ({kind}); "
            "tools read and write regular files only"
        )
    return path


def rel(ctx: TurnContext, path: Path) -> str:
    return workspace_name(path, ctx.roots)


def arg_path(raw: str) -> str:
    """A path argument as guards see it (workspace-relative posix), without touching disk.

    Guards get only the arguments, so this is lexical; the tool itself still resolves
    (and refuses) the real path.
    """
    p = raw.replace("\\", "/").strip()
    p = posixpath.normpath(p) if p else p
    return p[2:] if p.startswith("./") else p


def check_writable(ctx: TurnContext, path: Path) -> str:
    """Refuse the repository's own metadata; returns the workspace-relative name."""
    name = rel(ctx, path)
    if any(part in _NEVER_WRITE for part in name.split("/")):
        raise ToolError(f"{name}: files inside .git are never written by tools")
    return name


def _closest_names(path: Path) -> list[str]:
    parent = path.parent
    while not parent.is_dir() and parent != parent.parent:
        parent = parent.parent
    try:
        names = os.listdir(parent)
    except OSError:
        return []
    return difflib.get_close_matches(path.name, names, n=3, cutoff=0.5)


async def not_found(ctx: TurnContext, path: Path) -> ToolError:
    name = rel(ctx, path)
    close = await asyncio.to_thread(_closest_names, path)
    hint = ""
    if close:
        base = posixpath.dirname(name)
        hint = (
            "; did you mean "
            + ", ".join(posixpath.join(base, c) if base else c for c in close)
            + "?"
        )
    return ToolError(f"{name} does not exist{hint} (glob finds files by pattern)")


async def apply(ctx: TurnContext, path: Path, new_text: str | None, before: str | None) -> None:
    """One recorded, undoable change; the Host refusing it is the tool's failure."""
    outcome = await change_file(ctx, path, new_text, before=before)
    if not outcome.applied:
        raise ToolError(
            f"{rel(ctx, path)} was not changed: {outcome.reason or 'the editor refused the edit'}"
        )


class ChangesNotApplied(ToolError):
    """The editor refused one change of a set; the ones made before it were put back."""

    def __init__(self, reason: str, undone: str, partial: bool) -> None:
        super().__init__(f"{reason}; {undone}" if partial else reason)
        self.reason, self.undone = reason, undone


async def apply_changes(ctx: TurnContext, changes: list[FileChange]) -> None:
    """A tool's declared changes, in order, all or nothing: when the Host refuses one, the
    files already changed are restored (ChangesNotApplied says which could not be)."""
    steps: list[tuple[Path, str | None, str | None]] = []  # (file, after, before)
    for c in changes:
        file = c.file or resolve(ctx, c.path)
        if c.kind == "move":
            dest = c.file_to or resolve(ctx, c.to or c.path)
            steps += [(dest, c.after, None), (file, None, c.before)]
        else:
            steps.append((file, c.after, c.before))
    done: list[tuple[Path, str | None, str | None]] = []
    for step in steps:
        try:
            await apply(ctx, *step)
        except ToolError as exc:
            raise ChangesNotApplied(str(exc), await _put_back(ctx, done), bool(done)) from None
        done.append(step)
    await note_changes(changes)  # the call's card shows their diffs


async def _put_back(ctx: TurnContext, done: list[tuple[Path, str | None, str | None]]) -> str:
    failed = []
    for file, after, before in reversed(done):
        try:
            await apply(ctx, file, before, after)
        except ToolError:
            failed.append(rel(ctx, file))
    if failed:
        return "could not restore " + ", ".join(failed) + " (ndomo.undo can)"
    return f"the {len(done)} file(s) already changed were restored" if done else "no file changed"
