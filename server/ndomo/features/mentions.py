"""Mentions: what a prompt's `@` words name, read and put under the prompt in the model's
message, each cut visibly — never silently — past its share of one budget. `ndomo run` and
`ndomo.turn` (the chat views of VS Code and Neovim, any LSP client) share it.

Two sources, one budget:
- the request's `mentions`, as an editor resolved them: `file` (its unsaved text wins over
  the disk), `symbol` (the lines of its range), `problems` (the diagnostics the editor
  shows), `plan`;
- the prompt's own words (what a plain client or the terminal sends): `@plan`;
  `@<server>:<uri>` (`@docs:file:///x.md`), a resource of a configured MCP server, read with
  `resources/read` (the server is started for it; a project's server only once approved);
  or a path (relative to the workspace, or absolute inside it) of a text file. A word the
  request's mentions already cover is read once.

A word that names nothing (an e-mail address, `@decorator`, `@problems` without the editor's
list) stays plain text. A mention outside the workspace, a folder, a binary file, an unknown
server, a binary resource are refused with a clear error (`MentionError`) before the turn.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlparse

from ndomo.runtime.context import (
    FileMention,
    LocatedProblem,
    Mention,
    PlanMention,
    ProblemsMention,
    SymbolMention,
)
from ndomo.runtime.host import BaseHost
from ndomo.tools.mcp.basics import reference as mcp_reference

if TYPE_CHECKING:
    from ndomo.runtime.runtime import Runtime

MENTION = re.compile(r"(?<![\w@])@([\w./~+-][^\s]*)")
MENTION_CHARS = 24_000  # one mention's share (about 6,000 tokens at 4 characters a token)
TOTAL_CHARS = 60_000  # every mention together: the rest of the window stays the agent's

Read = Callable[[Path], Awaitable[str | None]]


class MentionError(ValueError):
    """A mention that cannot be honoured (outside the workspace, not text)."""


@dataclass
class Mentioned:
    name: str
    text: str


def cut(name: str, text: str, room: int) -> str:
    """`text` as the model gets it: whole, or its first lines up to `room` characters with
    a line saying how much was left out."""
    if len(text) <= room:
        return text
    kept = text[:room].rsplit("\n", 1)[0] if "\n" in text[:room] else text[:room]
    shown, total = kept.count("\n") + 1, text.count("\n") + (0 if text.endswith("\n") else 1)
    return (
        f"{kept}\n[cut: {name} is {len(text):,} characters; lines 1-{shown} of {total} shown — "
        "read the rest with the read tool]"
    )


def render(found: Sequence[Mentioned]) -> str:
    """The mentioned texts as the model reads them, under the prompt: each within its share,
    all within the budget; what does not fit is cut with a line that says so."""
    parts, left = [], TOTAL_CHARS
    for m in found:
        room = max(0, min(MENTION_CHARS, left))
        body = cut(m.name, m.text, room) if room else f"[cut: no room left for {m.name}]"
        left -= min(len(m.text), room)
        parts.append(f"Mentioned {m.name}:\n```\n{body.rstrip()}\n```")
    return "\n\n".join(parts)


async def attach(
    prompt: str,
    mentions: Sequence[Mention],
    root: Path,
    rt: Runtime,
    session: str | None,
    read: Read | None = None,
) -> str:
    """The text to put under the prompt: every mention read (`read` is the editor's view of
    a file, its unsaved buffer included; the disk by default) and cut. Empty when the prompt
    mentions nothing. A `/slash` command's words are its arguments, not mentions."""
    if prompt.lstrip().startswith("/") and not mentions:
        return ""
    found = await _Reader(root, rt, session, read or BaseHost().read_text).all(prompt, mentions)
    return render(found)


class _Reader:
    def __init__(self, root: Path, rt: Runtime, session: str | None, read: Read) -> None:
        self.root = root.resolve()
        self.rt = rt
        self.session = session
        self.read = read
        self.files: set[Path] = set()  # read once, whoever named them first
        self.plan = False

    async def all(self, prompt: str, mentions: Sequence[Mention]) -> list[Mentioned]:
        found: list[Mentioned] = []
        for m in mentions:  # the editor's first: they carry its unsaved text
            found.extend(await self.mention(m))
        seen: set[str] = set()
        for match in MENTION.finditer(prompt):
            word = match.group(1).rstrip(".,;:!?)")
            if word not in seen:
                seen.add(word)
                found.extend(await self.word(word))
        return found

    async def mention(self, m: Mention) -> list[Mentioned]:
        if isinstance(m, PlanMention):
            return await self.the_plan()
        if isinstance(m, ProblemsMention):
            return [Mentioned("the editor's problems", self.problems(m.items))]
        path = self.inside(m.path, m.path)
        if isinstance(m, FileMention):
            if path in self.files:
                return []
            self.files.add(path)
            return [Mentioned(self.shown(path), await self.text(path, m.path, m.text))]
        assert isinstance(m, SymbolMention)
        text = await self.text(path, m.path, m.text)
        lines = text.splitlines()
        start, end = m.range.start.line, m.range.end.line
        if m.range.end.character == 0 and end > start:
            end -= 1
        if start >= len(lines):
            raise MentionError(
                f"@symbol:{m.name}: {self.shown(path)} has {len(lines)} lines, "
                f"not line {start + 1}; the file changed since the symbol was found"
            )
        end = min(max(end, start), len(lines) - 1)
        snippet = "\n".join(lines[start : end + 1])
        return [
            Mentioned(f"symbol {m.name} ({self.shown(path)} lines {start + 1}-{end + 1})", snippet)
        ]

    async def word(self, word: str) -> list[Mentioned]:
        if word == "plan":
            return await self.the_plan()
        resource = mcp_reference(word)
        if resource is not None and not await asyncio.to_thread(self.names_file, word):
            return [Mentioned(word, await _resource(self.rt, *resource))]
        if not await asyncio.to_thread(self.names_file, word):
            return []  # names nothing: plain text
        path = self.inside(word, word)
        if path in self.files:
            return []
        self.files.add(path)
        return [Mentioned(self.shown(path), await self.text(path, word, None))]

    async def the_plan(self) -> list[Mentioned]:
        if self.plan:
            return []
        self.plan = True
        return [Mentioned("the committed plan", await _plan(self.rt, self.session))]

    def problems(self, items: Sequence[LocatedProblem]) -> str:
        if not items:
            return "(the editor shows no problems)"
        lines = []
        for p in items:
            try:
                where = self.shown(self.inside(p.path, p.path))
            except MentionError:
                where = p.path  # another folder of the editor's: named as the editor named it
            lines.append(f"- {where}: {p.describe()}")
        return "\n".join(lines)

    def names_file(self, word: str) -> bool:
        """The word names an existing path (else it is plain text)."""
        try:
            candidate = Path(word).expanduser()
            return (candidate if candidate.is_absolute() else self.root / candidate).exists()
        except (OSError, RuntimeError, ValueError):  # too long, a loop, a NUL: not a mention
            return False

    def inside(self, name: str, given: str) -> Path:
        """The workspace file `name` (relative, absolute or a file URI) names."""
        if "://" in name or name.startswith("file:"):
            parsed = urlparse(name)
            if parsed.scheme != "file":
                raise MentionError(f"@{given}: not a file (a {parsed.scheme}: URI)")
            name = unquote(parsed.path)
        try:
            candidate = Path(name).expanduser()
            path = (candidate if candidate.is_absolute() else self.root / candidate).resolve()
        except (OSError, RuntimeError, ValueError):
            raise MentionError(f"@{given}: not a path") from None
        if not path.is_relative_to(self.root):
            raise MentionError(f"@{given} is outside the workspace ({self.root})")
        return path

    def shown(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()

    async def text(self, path: Path, given: str, unsaved: str | None) -> str:
        """The editor's unsaved text when it sent some, else the file as the editor sees it."""
        text = unsaved
        if text is None:
            try:
                text = await self.read(path)
            except IsADirectoryError:
                raise MentionError(f"@{given} is a folder; mention a file") from None
            except UnicodeDecodeError:
                raise MentionError(f"@{given} is not UTF-8 text") from None
            except OSError as exc:
                raise MentionError(f"@{given}: {exc.strerror or exc}") from None
        if text is None:
            raise MentionError(f"@{given} is not a file; mention a file")
        if "\0" in text[:8192]:
            raise MentionError(f"@{given} is a binary file; mention text files only")
        return text


async def _resource(rt: Runtime, server: str, uri: str) -> str:
    from ndomo.security.text import one_line
    from ndomo.tools.mcp.catalog import McpUnavailable
    from ndomo.tools.mcp.resources import read_text

    try:
        return await read_text(rt.app, server, uri)
    except McpUnavailable as exc:  # the server's words: one inert line
        raise MentionError(f"@{server}:{uri}: {one_line(str(exc), 400)}") from None


async def _plan(rt: Runtime, session: str | None) -> str:
    from ndomo.plan.render import plan_detail

    state = await rt.session(session)
    store = await rt.app.store()
    row = await store.get_session(state.id)  # as stored: the state may not have read it yet
    if not row.committed_plan_id:
        return "(this session has no committed plan)"
    return plan_detail(await store.get_plan(row.committed_plan_id))
