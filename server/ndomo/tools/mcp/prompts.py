"""MCP prompts as slash commands: `/mcp__<server>__<prompt> [name=value | --name value …]`.

The server's `prompts/get` with those arguments; the text of its messages becomes the
turn's prompt, and the turn goes on to the model (other slash commands never reach it).
A hook before the slash dispatch rewrites the request, so the engine knows no MCP: what
the turn records, and what the session's history keeps, is the expanded text — what the
model read (the command alone would not say what the model was asked). A missing or
unknown argument, an unknown prompt or server, a server that fails: the turn fails with
that error and nothing reaches the model.
"""

from __future__ import annotations

import re
import shlex
from typing import TYPE_CHECKING, Any

from ndomo.runtime.slash import CommandSpec, SlashError
from ndomo.tools.mcp.basics import PREFIX
from ndomo.tools.mcp.catalog import McpCatalog, start_servers
from ndomo.tools.mcp.client import McpCallError

if TYPE_CHECKING:
    from mcp import types

    from ndomo.app import App
    from ndomo.runtime.context import TurnContext

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


class PromptError(Exception):
    """A prompt command that cannot be expanded; the turn fails with this message."""


def command_name(server: str, prompt: str) -> str:
    """The slash command's name (without `/`): `mcp__<server>__<prompt>`."""
    return f"{PREFIX}{server}__{_UNSAFE.sub('_', prompt)}"


def usage(server: str, prompt: types.Prompt) -> str:
    words = []
    for a in prompt.arguments or []:
        word = f"{a.name}=<{a.name}>"
        words.append(word if a.required else f"[{word}]")
    return " ".join(["/" + command_name(server, prompt.name), *words])


def _describe(server: str, prompt: types.Prompt) -> str:
    text = (prompt.description or prompt.title or prompt.name).strip()
    return f"{text} (MCP prompt of '{server}')"


def _refuse(ctx: TurnContext, args: list[str]) -> Any:
    # never reached: the PRE_DISPATCH hook expands or fails every `/mcp__` prompt first
    raise SlashError("an MCP prompt is expanded before the slash commands run")


async def listed(app: App, ctx: TurnContext | None) -> list[CommandSpec]:
    """The running servers' prompts as commands, for `/help` and the ACP command list; in a
    turn (`ctx`), the servers are started first as the turn would start them."""
    cat = await start_servers(ctx) if ctx is not None else app.existing(McpCatalog)
    if cat is None:
        return []
    specs = []
    for name in sorted(cat.servers):
        server = cat.ready(name)
        for prompt in server.prompts if server is not None else []:
            specs.append(
                CommandSpec(
                    name=command_name(name, prompt.name),
                    handler=_refuse,
                    help=_describe(name, prompt),
                    category="mcp",
                    usage=usage(name, prompt),
                )
            )
    return specs


def parse_args(words: list[str]) -> dict[str, str]:
    """`name=value` and `--name value` (or `--name=value`) words as arguments."""
    out: dict[str, str] = {}
    i = 0
    while i < len(words):
        word = words[i]
        if word.startswith("--") and len(word) > 2:
            name, eq, value = word[2:].partition("=")
            if not eq:
                if i + 1 >= len(words):
                    raise PromptError(f"--{name} needs a value")
                i += 1
                value = words[i]
        elif "=" in word and not word.startswith("="):
            name, _, value = word.partition("=")
        else:
            raise PromptError(f"{word!r}: give arguments as name=value or --name value")
        if name in out:
            raise PromptError(f"argument {name!r} is given twice")
        out[name] = value
        i += 1
    return out


def render(server: str, name: str, result: types.GetPromptResult) -> str:
    """The prompt's messages as one user prompt: their text, in order; an assistant's
    message is labelled (the model reads it as part of the user's prompt)."""
    labelled = any(m.role == "assistant" for m in result.messages)
    parts = []
    for m in result.messages:
        content: Any = m.content
        kind = getattr(content, "type", "")
        if kind == "text":
            text = content.text
        elif kind == "resource":
            res = content.resource
            text = getattr(res, "text", None) or f"[resource {res.uri}: binary, not shown]"
        elif kind == "resource_link":
            text = f"[resource {content.uri}]"
        else:
            text = f"[{kind or 'content'} not shown]"
        parts.append(f"{m.role.capitalize()}: {text}" if labelled else text)
    text = "\n\n".join(p for p in parts if p.strip())
    if not text.strip():
        raise PromptError(f"MCP prompt '{name}' of '{server}' has no text")
    if text.lstrip().startswith("/"):
        # the server's text is a prompt for the model, never a slash command of the user's
        text = f"MCP prompt {command_name(server, name)}:\n{text}"
    return text


async def expand(ctx: TurnContext, line: str) -> str:
    """The text of the prompt `/mcp__<server>__<prompt> args…` names."""
    try:
        words = shlex.split(line[1:])
    except ValueError as exc:
        raise PromptError(f"cannot parse {line!r}: {exc}") from None
    command, args = words[0], parse_args(words[1:])
    server_name, sep, wanted = command[len(PREFIX) :].partition("__")
    if not sep or not server_name or not wanted:
        raise PromptError(f"/{command}: an MCP prompt is /mcp__<server>__<prompt>")
    cat = await start_servers(ctx)
    known = sorted(cat.servers) if cat is not None else []
    if server_name not in known:
        raise PromptError(
            f"/{command}: no MCP server named '{server_name}' "
            f"(configured: {', '.join(known) or 'none'})"
        )
    assert cat is not None
    server = cat.ready(server_name)
    if server is None:
        why = cat.servers[server_name].error or cat.servers[server_name].state
        raise PromptError(f"/{command}: MCP server '{server_name}' is not running: {why}")
    prompt = next((p for p in server.prompts if command_name(server_name, p.name) == command), None)
    if prompt is None:
        offered = ", ".join(sorted(p.name for p in server.prompts)) or "none"
        raise PromptError(
            f"/{command}: MCP server '{server_name}' has no prompt '{wanted}' (its prompts: {offered})"
        )
    declared = {a.name: a for a in prompt.arguments or []}
    unknown = sorted(set(args) - set(declared))
    if unknown:
        raise PromptError(
            f"/{command}: unknown argument {', '.join(unknown)}; usage: {usage(server_name, prompt)}"
        )
    missing = [n for n, a in declared.items() if a.required and n not in args]
    if missing:
        raise PromptError(
            f"/{command}: missing argument {', '.join(missing)}; usage: {usage(server_name, prompt)}"
        )
    assert server.connection is not None
    try:
        result = await server.connection.get_prompt(prompt.name, args)
    except McpCallError as exc:
        raise PromptError(str(exc)) from None
    return render(server_name, prompt.name, result)
