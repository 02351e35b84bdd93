"""Build step: the agent, the tools offered, the system prompt and the message list."""

from __future__ import annotations

import asyncio
from pathlib import Path
from urllib.parse import unquote, urlparse

from ndomo.llm.messages import Message
from ndomo.runtime.context import TurnContext
from ndomo.runtime.history import load_history, model_history, record_soon
from ndomo.runtime.plugins import Plugins
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
    lines = text.splitlines()
    start, end = req.range.start.line, req.range.end.line
    if req.range.end.character == 0 and end > start:
        end -= 1
    end = min(end, len(lines) - 1)
    snippet = "\n".join(lines[start : end + 1])
    return f"Selection from {shown} lines {start + 1}-{end + 1}:\n```\n{snippet}\n```"


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
