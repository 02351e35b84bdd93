"""Lifecycle features every turn has: recording, base prompt, /mode, /agent, /new, /help."""

from __future__ import annotations

import asyncio
import contextlib
import platform
from typing import Any

from ndomo.runtime.builder import selection_of
from ndomo.runtime.context import TurnContext
from ndomo.runtime.events import TurnFinished, TurnStarted
from ndomo.runtime.history import settle
from ndomo.runtime.hooks import HookResult, LifecycleHook, Phase
from ndomo.runtime.plugins import Plugins
from ndomo.runtime.prompts import PromptContributor
from ndomo.runtime.runtime import TurnRefused
from ndomo.runtime.slash import CommandSpec, SlashError
from ndomo.store.errors import StoreError

# -- recording ----------------------------------------------------------------------------


class TurnRecordHook(LifecycleHook):
    phase = Phase.PRE_AGENT_BUILD
    name = "turn_record"
    priority = 10

    async def run(self, ctx: TurnContext) -> HookResult | None:
        store = await ctx.app.store()
        selection = await selection_of(ctx)
        write = asyncio.ensure_future(
            store.start_turn(
                session_id=ctx.session.id,
                agent=ctx.agent_name,
                mode=ctx.mode,
                prompt=ctx.request.prompt,
                parent_turn_id=ctx.parent_turn_id,
                # stored: the view shows the turn's chip again after a reload
                selection=selection.model_dump(mode="json") if selection else None,
            )
        )
        try:
            turn = await asyncio.shield(write)
        except asyncio.CancelledError:
            # The row is written on the store's thread whatever the cancel: its id is the
            # turn's, so the turn's end marks it cancelled instead of leaving it running.
            with contextlib.suppress(Exception):
                ctx.turn_id = (await write).id
            raise
        ctx.turn_id = turn.id
        await ctx.runtime.emit(
            ctx,
            TurnStarted(
                session=ctx.session.id,
                agent=ctx.agent_name,
                mode=ctx.mode,
                prompt=ctx.request.prompt,
                selection=selection,
            ),
        )
        return None


class TurnFinishHook(LifecycleHook):
    phase = Phase.FINALLY
    name = "turn_finish"
    priority = 90

    async def run(self, ctx: TurnContext) -> HookResult | None:
        await settle(ctx)  # the user message's write, started while the request went out
        if not ctx.turn_id:
            return None
        store = await ctx.app.store()
        await store.finish_turn(
            ctx.turn_id,
            ctx.status,
            tokens_in=ctx.tokens_in,
            tokens_out=ctx.tokens_out,
            error=ctx.error or ctx.handback,
        )
        await ctx.runtime.emit(
            ctx, TurnFinished(status=ctx.status, answer=ctx.answer, error=ctx.error or ctx.handback)
        )
        return None


# -- prompt -------------------------------------------------------------------------------


class AgentPrompt(PromptContributor):
    name = "agent"
    priority = 10

    async def contribute(self, ctx: TurnContext) -> str | None:
        return ctx.agent.prompt if ctx.agent else None

    async def compact(self, ctx: TurnContext) -> str | None:
        """For a tight context window: who the agent is, in its frontmatter's one line."""
        about = ctx.agent.description if ctx.agent else ""
        return f"You are the {ctx.agent_name} agent: {about}".strip()


class Environment(PromptContributor):
    name = "environment"
    priority = 90

    async def contribute(self, ctx: TurnContext) -> str | None:
        # Stable across a session's turns (no date, no tool list: the tools travel on their own;
        # no mode: the mode's own prompt names it).
        return (
            f"Workspace {ctx.app.root} ({platform.system()}); paths relative to it. "
            f"You are the {ctx.agent_name} agent."
        )


# -- slash built-ins ---------------------------------------------------------------------


async def _mode(ctx: TurnContext, args: list[str]) -> Any:
    rt, modes = ctx.runtime, Plugins.of(ctx).modes
    if not args:
        return {"mode": ctx.session.mode, "modes": sorted(modes)}
    if len(args) != 1:
        raise SlashError(f"usage: /mode <{'|'.join(modes)}>")
    try:
        state = await rt.set_mode(args[0], ctx.session.id)
    except (TurnRefused, StoreError) as exc:  # an unknown name or session: the user's error
        raise SlashError(str(exc)) from None
    return {"mode": state.mode}


async def _agent(ctx: TurnContext, args: list[str]) -> Any:
    rt = ctx.runtime
    if len(args) != 1:
        agents = await rt.agents()
        return {"agent": ctx.session.agent, "agents": sorted(agents.agents)}
    try:
        state = await rt.set_agent(args[0], ctx.session.id)
    except (TurnRefused, StoreError) as exc:  # an unknown name or session: the user's error
        raise SlashError(str(exc)) from None
    return {"agent": state.agent, "mode": state.mode}


async def _new(ctx: TurnContext, args: list[str]) -> Any:
    state = await ctx.runtime.new_session()
    return {"session": state.id, "mode": state.mode, "agent": state.agent}


async def _help(ctx: TurnContext, args: list[str]) -> Any:
    specs = await Plugins.of(ctx).slash.listed(ctx.app, ctx)
    return {"commands": [{"command": "/" + s.name, "help": s.help} for s in specs]}


def setup(plugins: Plugins) -> None:
    plugins.hooks.extend([TurnRecordHook(), TurnFinishHook()])
    plugins.prompts.add(AgentPrompt())
    plugins.prompts.add(Environment())
    for spec in (
        CommandSpec("mode", _mode, "Show or switch the session's mode", usage="/mode [m]"),
        CommandSpec("agent", _agent, "Show or switch the session's agent", usage="/agent [a]"),
        CommandSpec("new", _new, "Start a new session"),
        CommandSpec("help", _help, "List slash commands", aliases=("?",)),
    ):
        plugins.slash.add(spec)
