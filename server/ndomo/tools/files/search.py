"""`glob {pattern}` and `grep {pattern, path?, glob?}` over the workspace, .gitignore honoured."""

from __future__ import annotations

import asyncio
import os

from pydantic import ConfigDict, Field

from ndomo.lib.search import GrepError, PatternError, glob_files
from ndomo.lib.search import grep as grep_files
from ndomo.lib.workspace import PathArg, rel, resolve
from ndomo.runtime.context import TurnContext
from ndomo.runtime.tools import ToolError, tool
from ndomo.schema import Schema
from ndomo.security.paths import is_secret

GLOB_LIMIT = 500
GREP_LIMIT = 200


def _workspace_pattern(ctx: TurnContext, pattern: str) -> str:
    """Patterns are workspace-relative: an absolute one inside the workspace is rebased, others refused."""
    pat = pattern.strip().replace("\\", "/")
    if pat.startswith("~") or any(seg == ".." for seg in pat.split("/")):
        raise ToolError(
            f"glob pattern {pattern!r} leaves the workspace; patterns are workspace-relative (e.g. src/**/*.py)"
        )
    if os.path.isabs(pat):
        for root in ctx.roots:
            for form in {str(root).rstrip("/"), os.path.realpath(root)}:
                if pat == form or pat.startswith(form + "/"):
                    return pat[len(form) :].lstrip("/") or "**"
        raise ToolError(
            f"glob pattern {pattern!r} is outside the workspace; patterns are workspace-relative"
        )
    return pat


class GlobParams(Schema):
    model_config = ConfigDict(extra="forbid")
    pattern: PathArg = Field(min_length=1, description="gitignore-style, e.g. src/**/*.ts")


@tool("glob", GlobParams, core=True, description="Find files by name pattern.")
async def glob(ctx: TurnContext, p: GlobParams) -> str:
    pattern = _workspace_pattern(ctx, p.pattern)
    try:
        found = await asyncio.to_thread(glob_files, ctx.app.root, pattern, GLOB_LIMIT)
    except PatternError as exc:
        raise ToolError(f"bad glob pattern: {exc}") from None
    return found.render()


class GrepParams(Schema):
    model_config = ConfigDict(extra="forbid")
    pattern: str = Field(min_length=1, description="regex")
    path: PathArg | None = None
    glob: PathArg | None = Field(default=None, description="e.g. *.py")


@tool("grep", GrepParams, core=True, description="Search file contents by regex.")
async def grep(ctx: TurnContext, p: GrepParams) -> str:
    under = None
    if p.path and p.path.strip() not in (".", "./"):
        under = rel(ctx, resolve(ctx, p.path))
        under = None if under == "." else under
    try:
        found = await asyncio.to_thread(
            grep_files, ctx.app.root, p.pattern, path=under, glob=p.glob, limit=GREP_LIMIT
        )
    except (GrepError, PatternError) as exc:
        raise ToolError(str(exc)) from None
    secrets = ctx.app.settings.secret_globs
    hidden = {m.path for m in found.matches if is_secret(m.path, ctx.roots, secrets)}
    if hidden:
        found.matches = [m for m in found.matches if m.path not in hidden]
    text = found.render()
    if hidden:
        text += (
            f"\n({len(hidden)} secret-looking file(s) matched but are not shown: "
            f"{', '.join(sorted(hidden))}; read one to be asked)"
        )
    return text
