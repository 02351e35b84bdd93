"""`write {path, content}` and `edit {path, old_text, new_text}`: recorded, undoable changes."""

from __future__ import annotations

import asyncio
import difflib
import logging

from pydantic import ConfigDict, Field

from ndomo.lib.workspace import apply, arg_path, check_writable, not_found, resolve
from ndomo.runtime.context import TurnContext
from ndomo.runtime.tools import ToolError, tool
from ndomo.schema import Schema

log = logging.getLogger(__name__)


async def after_write(ctx: TurnContext, name: str, text: str | None) -> str:
    """What the features told of a write add to the result (plan-in-a-file: "also committed")."""
    if text is None:
        return ""
    notes = await ctx.runtime.plugins.on_file_written.notify(ctx, name, text)
    return "".join(f"\n{note}" for note in notes if note)


def _lines(text: str) -> int:
    return len(text.splitlines())


class WriteParams(Schema):
    model_config = ConfigDict(extra="forbid")
    path: str = Field(min_length=1)
    content: str = Field(description="whole file")


@tool(
    "write",
    WriteParams,
    core=True,
    risk="write",
    permission="write",
    description="Create or overwrite a file.",
    paths=lambda p: [arg_path(p.path)],
)
async def write(ctx: TurnContext, p: WriteParams) -> str:
    path = resolve(ctx, p.path)
    name = check_writable(ctx, path)
    if await asyncio.to_thread(path.is_dir):
        raise ToolError(f"{name} is a folder; give a file path")
    before = await ctx.host.read_text(path)
    if before == p.content:
        return f"{name} already has this content; nothing written"
    await apply(ctx, path, p.content, before)
    verb = "created" if before is None else "overwrote"
    return f"{verb} {name} ({_lines(p.content)} lines)" + await after_write(ctx, name, p.content)


class EditParams(Schema):
    model_config = ConfigDict(extra="forbid")
    path: str = Field(min_length=1)
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


@tool(
    "edit",
    EditParams,
    core=True,
    risk="write",
    permission="edit",
    description="Replace old_text with new_text in a file.",
    paths=lambda p: [arg_path(p.path)],
)
async def edit(ctx: TurnContext, p: EditParams) -> str:
    path = resolve(ctx, p.path)
    name = check_writable(ctx, path)
    current = await ctx.host.read_text(path)
    if current is None:
        raise await not_found(ctx, path)
    old, new = p.old_text, p.new_text
    hits = _occurrences(current, old)
    if (
        not hits and "\r\n" in current and "\r\n" not in old
    ):  # the model writes \n, the file has CRLF
        old, new = old.replace("\n", "\r\n"), new.replace("\r\n", "\n").replace("\n", "\r\n")
        hits = _occurrences(current, old)
    if not hits:
        hint = await asyncio.to_thread(_closest, current, p.old_text)
        raise ToolError(f"old_text not found in {name}.{hint}")
    if len(hits) > 1:
        where = ", ".join(str(_line_of(current, h)) for h in hits[:10])
        raise ToolError(
            f"old_text occurs {len(hits)} times in {name} (lines {where}); "
            "include more surrounding lines so it matches exactly once"
        )
    if old == new:
        raise ToolError("old_text and new_text are the same; nothing to change")
    at = hits[0]
    updated = current[:at] + new + current[at + len(old) :]
    await apply(ctx, path, updated, current)
    line = _line_of(current, at)
    return (
        f"edited {name} at line {line} (-{_lines(old) or 1} +{_lines(new)} lines)"
        + await after_write(ctx, name, updated)
    )
