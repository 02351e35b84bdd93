"""Build step: the agent, the tools offered, the system prompt and the message list."""

from __future__ import annotations

import asyncio
from pathlib import Path
from urllib.parse import unquote, urlparse

from ndomo.llm.messages import Message
from ndomo.runtime.context import TurnContext
from ndomo.runtime.events import TurnSelection
from ndomo.runtime.history import load_history, model_history, record_soon
from ndomo.runtime.plugins import Plugins
from ndomo.runtime.problems import Range
from ndomo.security.paths import workspace_name


def uri_to_path(uri: str) -> Path | None:
    parsed = urlparse(uri)
    if parsed.scheme not in ("file", ""):
        return None
    return Path(unquote(parsed.path))


def problems_context(ctx: TurnContext, shown: str) -> str:
    """The diagnostics the request carries (a quick fix's), for the user's message."""
    problems = ctx.request.diagnostics
    if not problems:
        return ""
    lines = "\n".join(f"- {p.describe()}" for p in problems)
    return f"\n\nThe editor reports in {shown}:\n{lines}"


async def selection_context(ctx: TurnContext) -> str | None:
    req = ctx.request
    if not req.uri:
        return None
    path = uri_to_path(req.uri)
    if path is None:
        return None
    shown = workspace_name(path, ctx.roots)
    return await _quoted(ctx, path, shown) + problems_context(ctx, shown)


async def _quoted(ctx: TurnContext, path: Path, shown: str) -> str:
    req = ctx.request
    try:
        text = await ctx.host.read_text(path)
    except IsADirectoryError:  # an explorer's folder: no text to quote
        return f"The user is looking at the folder {shown}."
    if text is None:
        return f"(the user refers to {shown}, which does not exist yet)"
    if req.range is None:
        return f"The user is looking at {shown}."
    start, end, snippet = selected_lines(text, req.range)
    return f"Selection from {shown} lines {start}-{end}:\n```\n{snippet}\n```"


def selected_lines(text: str, rng: Range) -> tuple[int, int, str]:
    """The whole lines a selection covers: first and last (1-based) and their text. A selection
    ending at the start of a line does not take that line."""
    lines = text.splitlines()
    start, end = rng.start.line, rng.end.line
    if rng.end.character == 0 and end > start:
        end -= 1
    end = max(start, min(end, len(lines) - 1))
    return start + 1, end + 1, "\n".join(lines[start : end + 1])


SELECTION_SHOWN = 2000  # characters of a selection the turn_started event carries


async def selection_of(ctx: TurnContext) -> TurnSelection | None:
    """What a code action's turn is about, for its `turn_started` event: the file (as the
    workspace shows it), the selected lines and the start of their text."""
    req = ctx.request
    path = uri_to_path(req.uri) if req.uri else None
    if path is None:
        return None
    shown = workspace_name(path, ctx.roots)
    if req.range is None:
        return TurnSelection(path=shown)
    try:
        text = await ctx.host.read_text(path)
    except OSError:
        text = None
    if text is None:
        line = req.range.start.line + 1
        return TurnSelection(path=shown, start_line=line, end_line=line)
    start, end, snippet = selected_lines(text, req.range)
    return TurnSelection(path=shown, start_line=start, end_line=end, text=snippet[:SELECTION_SHOWN])


async def _no_history() -> list[Message]:
    return []


async def build_turn(ctx: TurnContext) -> None:
    plugins = Plugins.of(ctx)
    ctx.agent = await ctx.runtime.check_agent(ctx.agent_name)
    ctx.tools = plugins.tools.filter(ctx)
    # Independent reads (prompt files, the open buffer, the stored history) wait together:
    # each is a hop to another thread, and the first token waits for all of them.
    ctx.system_prompt, selection, turn, stored = await asyncio.gather(
        plugins.prompts.build(ctx),
        selection_context(ctx),
        plugins.prompts.build(ctx, placement="turn"),
        load_history(ctx) if ctx.depth == 0 else _no_history(),
    )
    prompt = ctx.request.prompt
    if ctx.request.attached:  # the mentions' text, read and cut before the turn
        prompt = f"{prompt}\n\n{ctx.request.attached}"
    if selection:
        prompt = f"{prompt}\n\n{selection}"
    if turn:
        prompt = f"{prompt}\n\n{turn}"
    history = model_history(ctx, stored) if ctx.depth == 0 else []
    user = Message(role="user", content=prompt)
    ctx.messages = [Message(role="system", content=ctx.system_prompt), *history, user]
    record_soon(ctx, user)  # stored while the model request goes out
