"""The code tools: thin async wrappers that confine paths and keep the walk off the loop."""

from __future__ import annotations

import asyncio

from pydantic import ConfigDict, Field

from ndomo.lib.code import SymbolKind, outline, render_hits, render_references
from ndomo.lib.code import file_map as map_files
from ndomo.lib.code import find_references as find_refs
from ndomo.lib.code import find_symbol as find_defs
from ndomo.lib.workspace import arg_path, not_found, rel, resolve
from ndomo.runtime.context import TurnContext
from ndomo.runtime.tools import ToolError, tool
from ndomo.schema import Schema

SYMBOL_LIMIT = 50
REFERENCE_LIMIT = 200


class _P(Schema):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)


class FileMapParams(_P):
    path: str | None = None
    depth: int = Field(default=3, ge=1, le=10)


@tool("file_map", FileMapParams, description="Folders and files with symbol counts.")
async def file_map(ctx: TurnContext, p: FileMapParams) -> str:
    under = None
    if p.path and p.path not in (".", "./"):
        target = resolve(ctx, p.path)
        if not await asyncio.to_thread(target.is_dir):
            raise ToolError(f"{rel(ctx, target)} is not a folder (outline_file shows one file)")
        under = rel(ctx, target)
        under = None if under == "." else under
    try:
        fmap = await asyncio.to_thread(map_files, ctx.app.root, under, p.depth)
    except ValueError as exc:
        raise ToolError(str(exc)) from None
    return fmap.render()


class OutlineParams(_P):
    path: str = Field(min_length=1)


@tool(
    "outline_file",
    OutlineParams,
    description="Symbols of one file with line spans.",
    read_paths=lambda p: [arg_path(p.path)],
)
async def outline_file(ctx: TurnContext, p: OutlineParams) -> str:
    path = resolve(ctx, p.path)
    if await asyncio.to_thread(path.is_dir):
        raise ToolError(f"{rel(ctx, path)} is a folder (file_map maps folders)")
    try:
        text = await ctx.host.read_text(path)  # an open editor buffer wins over disk
    except UnicodeDecodeError:
        raise ToolError(f"{rel(ctx, path)} is not UTF-8 text") from None
    if text is None:
        raise await not_found(ctx, path)
    result = await asyncio.to_thread(outline, rel(ctx, path), text)
    return result.render()


class FindSymbolParams(_P):
    name: str = Field(min_length=1, description="name or Parent.name")
    kind: SymbolKind | None = Field(default=None, json_schema_extra={"x-hidden": True})


@tool("find_symbol", FindSymbolParams, description="Where a symbol is defined.")
async def find_symbol(ctx: TurnContext, p: FindSymbolParams) -> str:
    try:
        hits = await asyncio.to_thread(
            find_defs, ctx.app.root, p.name, kind=p.kind, limit=SYMBOL_LIMIT
        )
    except ValueError as exc:
        raise ToolError(str(exc)) from None
    return render_hits(hits, SYMBOL_LIMIT)


class FindReferencesParams(_P):
    name: str = Field(min_length=1)


@tool("find_references", FindReferencesParams, description="Code lines using an identifier.")
async def find_references(ctx: TurnContext, p: FindReferencesParams) -> str:
    try:
        refs = await asyncio.to_thread(find_refs, ctx.app.root, p.name, REFERENCE_LIMIT)
    except ValueError as exc:
        raise ToolError(str(exc)) from None
    return render_references(refs, REFERENCE_LIMIT)


TOOLS = [file_map, outline_file, find_symbol, find_references]
