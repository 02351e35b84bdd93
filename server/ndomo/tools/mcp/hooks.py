"""The MCP feature as every process registers it: its hooks, its tool provider and its
prompt lister, nothing more (with `basics`).

The catalog, the client, the sources and the SDK load with the first turn whose workspace
configures a server (or a client gives its own), an `/mcp__` prompt or an `@server:uri`
mention: a run in a workspace without servers sends its request without them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING

from ndomo.runtime.hooks import HookAction, HookResult, LifecycleHook, Phase
from ndomo.tools.mcp.basics import PREFIX, configured, has_catalog

if TYPE_CHECKING:
    from ndomo.app import App
    from ndomo.runtime.context import TurnContext
    from ndomo.runtime.slash import CommandSpec
    from ndomo.runtime.tools import ToolDescriptor


def _catalog() -> ModuleType:
    from ndomo.tools.mcp import catalog

    return catalog


def _prompts() -> ModuleType:
    from ndomo.tools.mcp import prompts

    return prompts


_loaded: dict[Callable[[], ModuleType], ModuleType] = {}


async def loaded(load: Callable[[], ModuleType]) -> ModuleType:
    """The module `load` imports, imported in a thread the first time: the catalog with the
    client and the sources is milliseconds of imports, which the event loop that runs the
    turn (and the editor's requests) does not wait for. Kept once the import is complete
    (another thread's import in progress is waited for by the import itself)."""
    module = _loaded.get(load)
    if module is None:
        module = _loaded[load] = await asyncio.to_thread(load)
    return module


def provide(ctx: TurnContext) -> list[ToolDescriptor]:
    """The running servers' tools (or `mcp_search` and what it found)."""
    if not has_catalog(ctx.app):
        return []
    from ndomo.tools.mcp.catalog import provide as offered  # imported: a catalog exists

    return offered(ctx)


class StartServers(LifecycleHook):
    """Starts (or re-checks) the workspace's MCP servers before the turn's tools are chosen."""

    phase = Phase.PRE_AGENT_BUILD
    name = "mcp.start"
    priority = 20

    async def run(self, ctx: TurnContext) -> HookResult | None:
        if configured(ctx.app):
            catalog = await loaded(_catalog)
            await catalog.start_servers(ctx)
        return None


class ExpandPrompt(LifecycleHook):
    """`/mcp__…` becomes the prompt's text before the slash commands run."""

    phase = Phase.PRE_DISPATCH
    name = "mcp.prompt"
    priority = 5  # before the hooks that read the prompt (the checkpoint's prefetch)

    def applies(self, ctx: TurnContext) -> bool:
        # the user's prompt only: a delegated task's prompt is the model's words
        return ctx.depth == 0 and ctx.request.prompt.lstrip().startswith("/" + PREFIX)

    async def run(self, ctx: TurnContext) -> HookResult | None:
        prompts = await loaded(_prompts)
        try:
            text = await prompts.expand(ctx, ctx.request.prompt.strip())
        except prompts.PromptError as exc:
            ctx.status, ctx.error = "failed", str(exc)
            return HookResult(HookAction.SKIP_AGENT)
        ctx.request = ctx.request.model_copy(update={"prompt": text})
        return None


async def listed(app: App, ctx: TurnContext | None) -> list[CommandSpec]:
    """The running servers' prompts as commands, for `/help` and the ACP command list; in a
    turn (`ctx`), the servers are started first as the turn would start them."""
    if not configured(app):
        return []
    prompts = await loaded(_prompts)
    return await prompts.listed(app, ctx)
