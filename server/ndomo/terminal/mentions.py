"""`@path`, `@plan` and `@<server>:<uri>` in an `ndomo run` prompt: the file's text (the
session's committed plan, an MCP server's resource) is added to the message the model reads,
under the prompt, and cut visibly — never silently — past its share of the budget.

A mention is a word starting with `@`: `@plan`; `@<server>:<uri>` (`@docs:file:///x.md`), a
resource of a configured MCP server, read with `resources/read` (the server is started for
it; a project's server only once approved); or a path (relative to the workspace, or
absolute inside it) of a text file. A word that names nothing (an e-mail address,
`@decorator`) stays plain text; a mention outside the workspace, an unknown server, a
binary resource are refused with a clear error.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ndomo.tools.mcp.resources import reference as mcp_reference

if TYPE_CHECKING:
    from ndomo.runtime.runtime import Runtime

MENTION = re.compile(r"(?<![\w@])@([\w./~+-][^\s]*)")
MENTION_CHARS = 24_000  # one mention's share (about 6,000 tokens at 4 characters a token)
TOTAL_CHARS = 60_000  # every mention together: the rest of the window stays the agent's


class MentionError(ValueError):
    """A mention that cannot be honoured (outside the workspace, not text)."""


@dataclass
class Mentioned:
    name: str
    text: str


def _read(path: Path) -> str | None:
    """A regular text file's text; None when it is not one."""
    if not path.is_file():
        return None
    data = path.read_bytes()
    if b"\0" in data[:8192]:
        raise MentionError(f"@{path.name} is a binary file; mention text files only")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise MentionError(f"@{path.name} is not UTF-8 text") from None


def _file(root: Path, word: str) -> Path | None:
    """The existing path `word` names, or None (then the word is plain text)."""
    try:
        candidate = Path(word).expanduser()
        path = (candidate if candidate.is_absolute() else root / candidate).resolve()
        return path if path.exists() else None
    except (OSError, RuntimeError, ValueError):  # too long, a loop, a NUL: not a mention
        return None


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


async def expand(prompt: str, root: Path, rt: Runtime, session: str | None) -> str:
    """The prompt with the mentioned files' and plan's text appended (unchanged when it
    mentions nothing)."""
    found: list[Mentioned] = []
    seen: set[str] = set()
    for match in MENTION.finditer(prompt):
        word = match.group(1).rstrip(".,;:!?)")
        if word in seen:
            continue
        if word == "plan":
            seen.add(word)
            found.append(Mentioned("the committed plan", await _plan(rt, session)))
            continue
        resource = mcp_reference(word)
        if resource is not None and not await asyncio.to_thread(_exists, root, word):
            seen.add(word)
            found.append(Mentioned(word, await _resource(rt, *resource)))
            continue
        path = await asyncio.to_thread(_file, root, word)
        if path is None:
            continue  # names nothing: plain text
        if not path.is_relative_to(root.resolve()):
            raise MentionError(f"@{word} is outside the workspace ({root})")
        text = await asyncio.to_thread(_read, path)
        if text is None:
            raise MentionError(f"@{word} is not a file; mention a file")
        seen.add(word)
        found.append(Mentioned(path.relative_to(root.resolve()).as_posix(), text))
    if not found:
        return prompt
    parts, left = [prompt, ""], TOTAL_CHARS
    for m in found:
        room = max(0, min(MENTION_CHARS, left))
        body = cut(m.name, m.text, room) if room else f"[cut: no room left for {m.name}]"
        left -= min(len(m.text), room)
        parts.append(f"Mentioned {m.name}:\n```\n{body.rstrip()}\n```")
    return "\n\n".join(p for p in parts if p) + "\n"


def _exists(root: Path, word: str) -> bool:
    """A file named like a resource mention (`a:b:c`) is the file."""
    return _file(root, word) is not None


async def _resource(rt: Runtime, server: str, uri: str) -> str:
    from ndomo.security.text import one_line
    from ndomo.tools.mcp.catalog import McpUnavailable
    from ndomo.tools.mcp.resources import read_text

    try:
        return await read_text(rt.app, server, uri)
    except McpUnavailable as exc:  # the server's words: one inert line on the terminal
        raise MentionError(f"@{server}:{uri}: {one_line(str(exc), 400)}") from None


async def _plan(rt: Runtime, session: str | None) -> str:
    from ndomo.plan.render import plan_detail

    state = await rt.session(session)
    store = await rt.app.store()
    row = await store.get_session(state.id)  # as stored: the state may not have read it yet
    if not row.committed_plan_id:
        return "(this session has no committed plan)"
    return plan_detail(await store.get_plan(row.committed_plan_id))
