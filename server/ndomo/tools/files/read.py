"""`read {path, start_line?, end_line?}`: numbered lines, open editor buffers first, capped."""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path

from pydantic import ConfigDict, Field, model_validator

from ndomo.lib.workspace import PathArg, arg_path, not_found, rel, resolve
from ndomo.runtime.context import TurnContext
from ndomo.runtime.tools import ToolError, tool
from ndomo.schema import Schema
from ndomo.security.paths import is_secret

MAX_LINES = 2000
MAX_CHARS = 60_000
MAX_LINE_CHARS = 2000
MAX_FILE_BYTES = 20 * 1024 * 1024
MAX_DIR_ENTRIES = 200


class ReadParams(Schema):
    model_config = ConfigDict(extra="forbid")
    path: PathArg = Field(min_length=1)
    start_line: int | None = Field(default=None, ge=1)
    end_line: int | None = Field(default=None, ge=1)

    @model_validator(mode="after")
    def _order(self) -> ReadParams:
        if self.start_line and self.end_line and self.end_line < self.start_line:
            raise ValueError(f"end_line {self.end_line} is before start_line {self.start_line}")
        return self


def _probe(path: Path) -> tuple[str, int | list[str]]:
    """('dir', entries) | ('file', size) | ('binary', size) | ('missing', 0) | ('special', 0)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "missing", 0
    if stat.S_ISDIR(st.st_mode):
        entries = sorted(e.name + ("/" if e.is_dir() else "") for e in os.scandir(path))
        return "dir", entries
    if not stat.S_ISREG(st.st_mode):
        return "special", 0  # a FIFO, socket or device: opening it may block
    with open(path, "rb") as fh:
        head = fh.read(8192)
    return ("binary" if b"\0" in head else "file"), st.st_size


def number(lines: list[str], first: int) -> list[str]:
    width = len(str(first + len(lines) - 1))
    out = []
    for n, line in enumerate(lines, first):
        if len(line) > MAX_LINE_CHARS:
            line = line[:MAX_LINE_CHARS] + f"… [line cut at {MAX_LINE_CHARS} of {len(line)} chars]"
        out.append(f"{n:>{width}}  {line}")
    return out


def render(name: str, text: str, start: int | None, end: int | None) -> str:
    lines = text.splitlines()
    total = len(lines)
    if total == 0:
        return f"{name} is empty"
    first = start or 1
    if first > total:
        raise ToolError(f"start_line {first} is past the end of {name} ({total} lines)")
    last = min(end or total, total)
    body: list[str] = []
    used, cut_at = 0, None
    for n, line in zip(range(first, last + 1), number(lines[first - 1 : last], first), strict=True):
        if len(body) >= MAX_LINES or used + len(line) + 1 > MAX_CHARS:
            cut_at = n - 1
            break
        body.append(line)
        used += len(line) + 1
    head = f"{name} (lines {first}-{cut_at or last} of {total})"
    out = [head, *body]
    if cut_at is not None:
        out.append(
            f"[cut at line {cut_at} of {total} by the {MAX_LINES}-line/{MAX_CHARS}-char read cap; "
            f"read on with start_line={cut_at + 1}]"
        )
    return "\n".join(out)


@tool(
    "read",
    ReadParams,
    core=True,
    description="Read a file (numbered lines).",
    read_paths=lambda p: [arg_path(p.path)],
)
async def read(ctx: TurnContext, p: ReadParams) -> str:
    path = resolve(ctx, p.path)
    name = rel(ctx, path)
    secrets = ctx.app.settings.secret_globs
    if is_secret(path, ctx.roots, secrets) and not is_secret(arg_path(p.path), ctx.roots, secrets):
        raise ToolError(
            f"{p.path} leads to the secret-looking file {name}; read it by that name so the user is asked"
        )
    kind, info = await asyncio.to_thread(_probe, path)
    if kind == "dir":
        entries = list(info)  # type: ignore[arg-type]  # _probe returns entries for a dir and a size for a file
        shown = entries[:MAX_DIR_ENTRIES]
        more = (
            f"\n… {len(entries) - len(shown)} more (use glob)" if len(entries) > len(shown) else ""
        )
        return f"{name}/ is a folder with {len(entries)} entries:\n" + "\n".join(shown) + more
    if kind == "special":
        raise ToolError(f"{name} is not a regular file; not read")
    if kind == "binary":
        raise ToolError(f"{name} is a binary file ({info} bytes); not shown")
    if kind == "file" and int(info) > MAX_FILE_BYTES:  # type: ignore[arg-type]  # _probe returns entries for a dir and a size for a file
        raise ToolError(
            f"{name} is {info} bytes, over the {MAX_FILE_BYTES}-byte read limit; use grep on it"
        )
    try:
        text = await ctx.host.read_text(path)
    except UnicodeDecodeError:
        raise ToolError(f"{name} is not UTF-8 text; not shown") from None
    if text is None:
        raise await not_found(ctx, path)
    return render(name, text, p.start_line, p.end_line)
