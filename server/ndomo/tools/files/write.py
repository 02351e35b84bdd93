"""`write {path, content}` and `edit {path, old_text, new_text}`: recorded, undoable changes."""

from __future__ import annotations

import asyncio
import difflib
import logging

from pydantic import ConfigDict, Field

from ndomo.lib.workspace import (
    PathArg,
    apply_changes,
    arg_path,
    check_writable,
    not_found,
    rel,
    resolve,
)
from ndomo.runtime.context import TurnContext
from ndomo.runtime.plugins import Plugins
from ndomo.runtime.tools import ChangeKind, FileChange, ToolError, tool
from ndomo.schema import Schema
from ndomo.tools.files import problems

log = logging.getLogger(__name__)


async def after_write(ctx: TurnContext, name: str, text: str | None) -> str:
    """What the features told of a write add to the result (plan-in-a-file: "also committed")."""
    if text is None:
        return ""
    notes = await Plugins.of(ctx).on_file_written.notify(ctx, name, text)
    return "".join(f"\n{note}" for note in notes if note)


def _lines(text: str) -> int:
    return len(text.splitlines())


class WriteParams(Schema):
    model_config = ConfigDict(extra="forbid")
    path: PathArg = Field(min_length=1)
    content: str = Field(description="whole file")


async def write_changes(ctx: TurnContext, p: WriteParams) -> list[FileChange]:
    """The change a `write` makes: none when the file already has this content."""
    path = resolve(ctx, p.path)
    if await asyncio.to_thread(path.is_dir):
        raise ToolError(f"{rel(ctx, path)} is a folder; give a file path")
    before = await ctx.host.read_text(path)
    if before == p.content:
        return []
    kind: ChangeKind = "create" if before is None else "modify"
    return [FileChange(arg_path(p.path), kind, before, p.content, file=path)]


@tool(
    "write",
    WriteParams,
    core=True,
    risk="write",
    permission="write",
    description="Create or overwrite a file.",
    changes=write_changes,
)
async def write(ctx: TurnContext, p: WriteParams) -> str:
    name = check_writable(ctx, resolve(ctx, p.path))
    changes = await write_changes(ctx, p)
    if not changes:
        return f"{name} already has this content; nothing written"
    await problems.before_edit(ctx, [changes[0].file or resolve(ctx, p.path)])
    await apply_changes(ctx, changes)
    verb = "created" if changes[0].kind == "create" else "overwrote"
    return (
        f"{verb} {name} ({_lines(p.content)} lines)"
        + await after_write(ctx, name, p.content)
        + await problems.after_edit(ctx, [changes[0].file or resolve(ctx, p.path)])
    )


class EditParams(Schema):
    model_config = ConfigDict(extra="forbid")
    path: PathArg = Field(min_length=1)
    old_text: str = Field(min_length=1, description="exact, occurs once")
    new_text: str


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _occurrences(text: str, needle: str) -> list[int]:
    out, i = [], text.find(needle)
    while i != -1:
        out.append(i)
        i = text.find(needle, i + 1)
    return out


def _closest(text: str, old: str) -> str:
    """Where the model probably meant, for a 'not found' hint."""
    wanted = [ln.strip() for ln in old.splitlines() if ln.strip()]
    if not wanted:
        return ""
    lines = text.splitlines()

    def squash(s: str) -> str:
        return " ".join(s.split())

    flat = [squash(ln) for ln in lines]
    first = squash(wanted[0])
    for i, ln in enumerate(flat):
        if ln == first and all(
            i + k < len(flat) and flat[i + k] == squash(w) for k, w in enumerate(wanted)
        ):
            return f" It matches at line {i + 1} if whitespace is ignored: copy the indentation exactly."
    best, best_i = 0.0, -1
    for i, ln in enumerate(flat[:20000]):
        if not ln:
            continue
        sm = difflib.SequenceMatcher(None, first, ln, autojunk=False)
        if sm.real_quick_ratio() <= best or sm.quick_ratio() <= best:
            continue
        r = sm.ratio()
        if r > best:
            best, best_i = r, i
    if best_i < 0 or best < 0.4:
        return " Nothing similar found; read the file first."
    return f" Closest line {best_i + 1}: {lines[best_i].strip()[:200]!r}. Read the file and copy the text exactly."


def replace_once(current: str, old: str, new: str, name: str) -> tuple[str, int, str, str]:
    """`current` with `old` replaced by `new`, as `edit` does it: (text, offset, old, new as
    applied). The model writes \n; a file with CRLF gets its line ends on both texts."""
    hits = _occurrences(current, old)
    if not hits and "\r\n" in current and "\r\n" not in old:
        old, new = old.replace("\n", "\r\n"), new.replace("\r\n", "\n").replace("\n", "\r\n")
        hits = _occurrences(current, old)
    if not hits:
        raise ToolError(f"old_text not found in {name}.")
    if len(hits) > 1:
        where = ", ".join(str(_line_of(current, h)) for h in hits[:10])
        raise ToolError(
            f"old_text occurs {len(hits)} times in {name} (lines {where}); "
            "include more surrounding lines so it matches exactly once"
        )
    if old == new:
        raise ToolError("old_text and new_text are the same; nothing to change")
    at = hits[0]
    return current[:at] + new + current[at + len(old) :], at, old, new


async def edit_changes(ctx: TurnContext, p: EditParams) -> list[FileChange]:
    """The change an `edit` makes, CRLF files included; a readable ToolError when the text
    is not there exactly once."""
    path = resolve(ctx, p.path)
    name = rel(ctx, path)
    current = await ctx.host.read_text(path)
    if current is None:
        raise await not_found(ctx, path)
    try:
        updated = replace_once(current, p.old_text, p.new_text, name)[0]
    except ToolError as exc:
        if not str(exc).startswith("old_text not found"):
            raise
        hint = await asyncio.to_thread(_closest, current, p.old_text)
        raise ToolError(f"{exc}{hint}") from None
    return [FileChange(arg_path(p.path), "modify", current, updated, file=path)]


@tool(
    "edit",
    EditParams,
    core=True,
    risk="write",
    permission="edit",
    description="Replace old_text with new_text in a file.",
    changes=edit_changes,
)
async def edit(ctx: TurnContext, p: EditParams) -> str:
    name = check_writable(ctx, resolve(ctx, p.path))
    (change,) = await edit_changes(ctx, p)
    assert change.before is not None and change.after is not None
    _, at, old, new = replace_once(change.before, p.old_text, p.new_text, name)
    target = change.file or resolve(ctx, p.path)
    await problems.before_edit(ctx, [target])
    await apply_changes(ctx, [change])
    line = _line_of(change.before, at)
    return (
        f"edited {name} at line {line} (-{_lines(old) or 1} +{_lines(new)} lines)"
        + await after_write(ctx, name, change.after)
        + await problems.after_edit(ctx, [target])
    )
