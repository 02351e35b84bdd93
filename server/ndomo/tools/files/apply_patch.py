"""`apply_patch {patch}`: a unified diff over several files, all or nothing."""

from __future__ import annotations

import logging
from pathlib import Path

from pydantic import ConfigDict, Field, field_validator

from ndomo.lib.workspace import (
    ChangesNotApplied,
    apply_changes,
    arg_path,
    check_writable,
    no_nul,
    rel,
    resolve,
)
from ndomo.runtime.context import TurnContext
from ndomo.runtime.tools import ChangeKind, FileChange, ToolError, tool
from ndomo.schema import Schema
from ndomo.tools.files import problems
from ndomo.tools.files.patch import PatchError, apply_file_patch, parse_patch
from ndomo.tools.files.write import after_write

log = logging.getLogger(__name__)


class ApplyPatchParams(Schema):
    model_config = ConfigDict(extra="forbid")
    patch: str = Field(
        min_length=1,
        description="unified diff as `git diff` prints it; /dev/null for new or deleted files",
    )

    @field_validator("patch")
    @classmethod
    def _paths_without_nul(cls, v: str) -> str:
        """A file path holding NUL is refused here, before a guard reads the named files."""
        if "\x00" in v:
            try:
                files = parse_patch(v)
            except PatchError:
                return v  # the tool says why it cannot parse
            for fp in files:
                for path in fp.paths:
                    no_nul(path)
        return v


async def patch_plan(ctx: TurnContext, p: ApplyPatchParams) -> tuple[list[FileChange], list[str]]:
    """Every file change the patch makes, checked hunk by hunk on copies before anything is
    written, with a summary line per file patch. A readable ToolError when it does not fit."""
    try:
        files = parse_patch(p.patch)
    except PatchError as exc:
        raise ToolError(f"patch not applied: {exc}") from None
    # Work on copies first: the current text of every file, then the text after each file patch.
    original: dict[Path, str | None] = {}
    work: dict[Path, str | None] = {}
    named: dict[Path, str] = {}  # the name the patch gave each file
    order: list[Path] = []
    moves: dict[Path, Path] = {}  # renamed file → its new place
    summary: list[str] = []
    for fp in files:
        src = resolve(ctx, fp.old_path) if fp.old_path else None
        dst = resolve(ctx, fp.new_path) if fp.new_path else None
        for target, raw in ((src, fp.old_path), (dst, fp.new_path)):
            if target is not None and raw is not None and target not in work:
                text = await ctx.host.read_text(target)
                original[target] = work[target] = text
                named[target] = arg_path(raw)
                order.append(target)
        base = work[src] if src is not None else (work[dst] if dst is not None else None)
        try:
            result = apply_file_patch(base, fp)
        except PatchError as exc:
            raise ToolError(f"patch not applied, no file changed: {exc}") from None
        if src is not None and dst is not None and src != dst:
            if work[dst] is not None:
                raise ToolError(
                    f"patch not applied, no file changed: {rel(ctx, dst)} (rename target) already exists"
                )
            work[src], work[dst] = None, result
            moves[src] = dst
            summary.append(f"renamed {rel(ctx, src)} → {rel(ctx, dst)}")
        elif dst is None:
            assert src is not None  # a patch names one side at least
            work[src] = None
            summary.append(f"deleted {rel(ctx, src)}")
        else:
            verb = "created" if fp.old_path is None else "patched"
            work[dst] = result
            summary.append(f"{verb} {rel(ctx, dst)} ({len(fp.hunks)} hunks)")
    changes: list[FileChange] = []
    moved: set[Path] = set()  # both sides of an emitted move
    for path in order:
        dst = moves.get(path)
        if (
            dst is not None
            and work[path] is None
            and original[dst] is None
            and work[dst] is not None
        ):
            changes.append(
                FileChange(
                    named[path],
                    "move",
                    original[path],
                    work[dst],
                    to=named[dst],
                    file=path,
                    file_to=dst,
                )
            )
            moved |= {path, dst}
    for path in order:
        if path in moved:
            continue
        before, after = original[path], work[path]
        if before == after:
            continue
        kind: ChangeKind = "create" if before is None else ("delete" if after is None else "modify")
        changes.append(FileChange(named[path], kind, before, after, file=path))
    return changes, summary


async def patch_changes(ctx: TurnContext, p: ApplyPatchParams) -> list[FileChange]:
    return (await patch_plan(ctx, p))[0]


@tool(
    "apply_patch",
    ApplyPatchParams,
    risk="write",
    permission="edit",
    description="Apply a unified diff to files; all hunks or none.",
    changes=patch_changes,
)
async def apply_patch(ctx: TurnContext, p: ApplyPatchParams) -> str:
    changes, summary = await patch_plan(ctx, p)
    for c in changes:
        for target in (c.file, c.file_to):
            if target is not None:
                check_writable(ctx, target)
    edited = [t for c in changes if c.after is not None and (t := c.file_to or c.file)]
    await problems.before_edit(ctx, edited)
    try:
        await apply_changes(ctx, changes)
    except ChangesNotApplied as exc:
        raise ToolError(f"patch not applied: {exc.reason}; {exc.undone}") from None
    notes = []
    for c in changes:
        target = c.file_to or c.file
        if c.after is not None and target is not None:
            notes.append(await after_write(ctx, rel(ctx, target), c.after))
    return "\n".join(summary) + "".join(notes) + await problems.after_edit(ctx, edited)
