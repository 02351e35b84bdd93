"""`apply_patch {patch}`: a unified diff over several files, all or nothing."""

from __future__ import annotations

import logging
from pathlib import Path

from pydantic import ConfigDict, Field, field_validator

from ndomo.lib.workspace import apply, arg_path, check_writable, no_nul, rel, resolve
from ndomo.runtime.context import TurnContext
from ndomo.runtime.tools import ToolError, tool
from ndomo.schema import Schema
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


def _patch_paths(p: ApplyPatchParams) -> list[str]:
    try:
        return [arg_path(x) for fp in parse_patch(p.patch) for x in fp.paths]
    except PatchError:
        return []  # unparseable: the tool reports why; guards see no path and refuse where they must


@tool(
    "apply_patch",
    ApplyPatchParams,
    risk="write",
    permission="edit",
    description="Apply a unified diff to files; all hunks or none.",
    paths=_patch_paths,
)
async def apply_patch(ctx: TurnContext, p: ApplyPatchParams) -> str:
    try:
        files = parse_patch(p.patch)
    except PatchError as exc:
        raise ToolError(f"patch not applied: {exc}") from None
    # Work on copies first: the current text of every file, then the text after each file patch.
    original: dict[Path, str | None] = {}
    work: dict[Path, str | None] = {}
    order: list[Path] = []
    summary: list[str] = []
    for fp in files:
        src = resolve(ctx, fp.old_path) if fp.old_path else None
        dst = resolve(ctx, fp.new_path) if fp.new_path else None
        for target in (src, dst):
            if target is not None and target not in work:
                check_writable(ctx, target)
                text = await ctx.host.read_text(target)
                original[target] = work[target] = text
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
            summary.append(f"renamed {rel(ctx, src)} → {rel(ctx, dst)}")
        elif dst is None:
            work[src] = None  # type: ignore[index]  # dst is None here, so src is not (a patch names one side)
            summary.append(f"deleted {rel(ctx, src)}")  # type: ignore[arg-type]  # dst is None here, so src is not (a patch names one side)
        else:
            verb = "created" if fp.old_path is None else "patched"
            work[dst] = result
            summary.append(f"{verb} {rel(ctx, dst)} ({len(fp.hunks)} hunks)")
    done: list[Path] = []
    for path in order:
        if work[path] == original[path]:
            continue
        try:
            await apply(ctx, path, work[path], original[path])
        except ToolError as exc:
            undone = await _undo(ctx, done, original, work)
            raise ToolError(f"patch not applied: {exc}; {undone}") from None
        done.append(path)
    notes = [
        await after_write(ctx, rel(ctx, path), work[path])
        for path in done
        if work[path] is not None
    ]
    return "\n".join(summary) + "".join(notes)


async def _undo(ctx: TurnContext, done: list[Path], original: dict, work: dict) -> str:
    """The editor refused one file mid-way: put back the ones already written."""
    failed = []
    for path in reversed(done):
        try:
            await apply(ctx, path, original[path], work[path])
        except ToolError:
            failed.append(rel(ctx, path))
    if failed:
        return "could not restore " + ", ".join(failed) + " (ndomo.undo can)"
    return f"the {len(done)} file(s) already changed were restored" if done else "no file changed"
