"""The MCP feature as every process registers it: its hooks, its tool provider and its
prompt lister, nothing more (with `basics`).

The catalog, the client, the sources and the SDK load with the first turn whose workspace
configures a server (or a client gives its own), an `/mcp__` prompt or an `@server:uri`
mention: a run in a workspace without servers sends its request without them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ndomo.runtime.hooks import HookAction, HookResult, LifecycleHook, Phase
from ndomo.tools.mcp.basics import PREFIX, configured, has_catalog

if TYPE_CHECKING:
    from ndomo.app import App
    from ndomo.runtime.context import TurnContext
    from ndomo.runtime.slash import CommandSpec
    from ndomo.runtime.tools import ToolDescriptor


def provide(ctx: TurnContext) -> list[ToolDescriptor]:
    """The running servers' tools (or `mcp_search` and what it found)."""
    if not has_catalog(ctx.app):
        return []
    from ndomo.tools.mcp.catalog import provide as offered

    return offered(ctx)


class StartServers(LifecycleHook):
    """Starts (or re-checks) the workspace's MCP servers before the turn's tools are chosen."""

    phase = Phase.PRE_AGENT_BUILD
    name = "mcp.start"
    priority = 20

    async def run(self, ctx: TurnContext) -> HookResult | None:
        if configured(ctx.app):
            from ndomo.tools.mcp.catalog import start_servers

            await start_servers(ctx)
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
        from ndomo.tools.mcp.prompts import PromptError, expand

        try:
            text = await expand(ctx, ctx.request.prompt.strip())
        except PromptError as exc:
            ctx.status, ctx.error = "failed", str(exc)
            return HookResult(HookAction.SKIP_AGENT)
        ctx.request = ctx.request.model_copy(update={"prompt": text})
        return None


async def listed(app: App, ctx: TurnContext | None) -> list[CommandSpec]:
    """The running servers' prompts as commands, for `/help` and the ACP command list; in a
    turn (`ctx`), the servers are started first as the turn would start them."""
    if not configured(app):
        return []
    from ndomo.tools.mcp.prompts import listed as prompts

    return await prompts(app, ctx)
