"""The agent loop: model → tool calls → results, until an answer, the mode's cap,
a hand-back or a cancel."""

from __future__ import annotations

import logging
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from ndomo.llm.errors import ModelContextExceeded, ModelError, ModelToolsUnsupported
from ndomo.llm.loops import LoopWatch
from ndomo.llm.messages import (
    Finished,
    Message,
    TextChunk,
    ThoughtChunk,
    ToolCall,
    ToolCallReady,
    ToolSpec,
    UsageEvent,
)
from ndomo.runtime import model_fit as mf
from ndomo.runtime.callnotes import CallNotes, current_notes
from ndomo.runtime.context import TurnContext
from ndomo.runtime.coordinator import ToolCallCoordinator
from ndomo.runtime.events import Notice, TextDelta, ThoughtDelta, ToolFinished, ToolStarted
from ndomo.runtime.history import SKIPPED, record, record_soon
from ndomo.runtime.output import current_call
from ndomo.runtime.plugins import Plugins
from ndomo.runtime.tools import ToolResult, tool_specs

if TYPE_CHECKING:
    from ndomo.app import App
    from ndomo.config import ModelConfig
    from ndomo.llm.client import ModelClient

log = logging.getLogger("ndomo.runtime")


def client_for(ctx: TurnContext) -> Any:
    """One model client per distinct configuration, shared across turns."""

    cfg = ctx.app.settings.model
    agent_model = ctx.agent.model if ctx.agent else None
    if agent_model:
        cfg = cfg.model_copy(update={"name": agent_model})
    return shared_client(ctx.app, cfg)


class ModelClients:
    """An App's model clients, one per distinct configuration, closed with the App."""

    def __init__(self) -> None:
        self._by_config: dict[str, ModelClient] = {}

    def get(self, cfg: ModelConfig) -> ModelClient:
        from ndomo.llm.client import make_client

        key = cfg.model_dump_json()
        client = self._by_config.get(key)
        if client is None:
            client = self._by_config[key] = make_client(cfg)
        return client

    async def aclose(self) -> None:
        clients, self._by_config = list(self._by_config.values()), {}
        for client in clients:
            try:
                await client.aclose()
            except Exception:  # noqa: BLE001 - one client failing to close must not keep the others open
                log.exception("closing the model client for %s failed", client.url)


def shared_client(app: App, cfg: ModelConfig | None = None) -> ModelClient:
    """The App's client for `cfg` (default: the configured model), made once.

    Also called by the LSP warm-up, so the first turn does not build the SDK client.
    """
    clients = app.instance(ModelClients, ModelClients)
    return clients.get(cfg if cfg is not None else app.settings.model)


def temperature_for(ctx: TurnContext) -> float | None:
    t = ctx.agent.temperature if ctx.agent else None
    return t if t is not None else ctx.app.settings.model.temperature


def iteration_cap(ctx: TurnContext) -> int:
    mode = Plugins.of(ctx).modes[ctx.mode]
    return mode.iteration_cap(ctx)


def summarise(result: ToolResult, limit: int = 160) -> str:
    first = result.content.strip().splitlines()[0] if result.content.strip() else result.status
    return first[:limit]


class Cut(Exception):
    """The answer was stopped before the model ended it: the output cap or a loop. The text
    so far stays the turn's answer; tool calls cut off with it are dropped."""

    def __init__(self, text: str, why: str) -> None:
        super().__init__(why)
        self.text, self.why = text, why


async def _stream(
    ctx: TurnContext, client: Any, messages: list[Message], specs: list[ToolSpec], cap: int
) -> tuple[str, list[ToolCall]]:
    text: list[str] = []
    calls: list[ToolCall] = []
    watch = LoopWatch()
    events = client.stream(messages, specs, temperature=temperature_for(ctx), max_tokens=cap)
    async with aclosing(events):  # a stopped answer closes the request at once
        async for event in events:
            if isinstance(event, TextChunk):
                text.append(event.text)
                await ctx.runtime.emit(ctx, TextDelta(text=event.text))
                if watch.feed(event.text):
                    raise Cut("".join(text), "the model repeated itself; stopped")
            elif isinstance(event, ThoughtChunk):
                await ctx.runtime.emit(ctx, ThoughtDelta(text=event.text))
            elif isinstance(event, ToolCallReady):
                calls.append(event.call)
            elif isinstance(event, UsageEvent):
                ctx.tokens_in += event.usage.prompt_tokens or 0
                ctx.tokens_out += event.usage.completion_tokens or 0
            elif isinstance(event, Finished) and event.reason == "length":
                raise Cut(
                    "".join(text),
                    f"the answer hit the output limit of {cap} tokens "
                    "(model.max_output_tokens, or the room left in the context window)",
                )
            # after the event went out: what waits for the answer to begin (the turn's
            # snapshot, a git process started on this loop) runs behind the first token
            ctx.answering.set()
    return "".join(text), calls


async def run_call(ctx: TurnContext, call: ToolCall) -> ToolResult:
    rt, calls = ctx.runtime, ctx.runtime.part(ToolCallCoordinator)
    entry = calls.new(call.name, ctx.turn_id)
    notes = CallNotes(call_id=entry.id)
    await rt.emit(
        ctx, ToolStarted(call_id=entry.id, name=call.name, arguments=call.arguments or {})
    )
    if call.error:
        result = ToolResult.failed(
            f"the arguments for '{call.name}' were not valid JSON ({call.error}); send them again as a JSON object"
        )
    else:
        token = current_call.set((entry.id, call.name))  # the tool's task inherits it (live output)
        noted = current_notes.set(notes)
        try:
            result = await calls.run(
                entry, lambda: Plugins.of(ctx).tools.execute(ctx, call.name, call.arguments)
            )
        finally:
            current_notes.reset(noted)
            current_call.reset(token)
    await rt.emit(
        ctx,
        ToolFinished(
            call_id=entry.id,
            name=call.name,
            status=result.status,
            summary=summarise(result),
            sandbox=notes.sandbox,
            files=notes.files or None,
        ),
    )
    stored = notes.stored()
    return result.model_copy(update={"details": stored}) if stored else result


def _requires_tools(ctx: TurnContext) -> bool:
    mode = Plugins.of(ctx).modes.get(ctx.mode)
    return mode is not None and mode.contract.requires_tools


async def _ask(ctx: TurnContext, client: Any, specs: list[ToolSpec]) -> tuple[str, list[ToolCall]]:
    """One model call that fits the context window; a context error learns the window and
    tries once smaller; a tool-less model answers without tools unless the mode requires them."""
    retried = False
    while True:
        if specs and client.caps.tools is False:
            if _requires_tools(ctx):
                raise ModelError(mf.tools_refusal(ctx, client))
            specs = []  # known tool-less: answer without them
        fitted = await mf.fit_request(ctx, client, specs)
        if fitted.steps and not ctx.fit_noticed:
            ctx.fit_noticed = True
            await ctx.runtime.emit(
                ctx,
                Notice(
                    level="info",
                    message="to fit the model's context window: " + "; ".join(fitted.steps),
                ),
            )
        try:
            cap = fitted.output_cap(ctx.app.settings.model.max_output_tokens)
            return await _stream(ctx, client, fitted.messages, fitted.tools, cap)
        except ModelContextExceeded as err:
            if retried:
                raise
            retried = True
            mf.learn_window_from_error(client, err, fitted.tokens)
            await mf.save_caps(ctx, client)
        except ModelToolsUnsupported:
            await mf.save_caps(ctx, client)
            if not specs or _requires_tools(ctx):
                raise ModelError(mf.tools_refusal(ctx, client)) from None
            specs = []
            await ctx.runtime.emit(
                ctx,
                Notice(
                    level="warning",
                    message=f"model '{client.cfg.name}' does not support "
                    "tool calling: answering without tools",
                ),
            )
        finally:
            await mf.save_caps(ctx, client)


async def execute(ctx: TurnContext) -> None:
    client = client_for(ctx)
    specs = tool_specs(ctx.tools)
    cap = iteration_cap(ctx)
    try:
        await mf.load_caps(ctx, client)
        while True:
            if ctx.iterations >= cap:
                ctx.status = "capped"
                ctx.error = f"stopped after {cap} model calls, the {ctx.mode} mode's iteration cap"
                await ctx.runtime.emit(ctx, Notice(level="warning", message=ctx.error))
                break
            ctx.iterations += 1
            try:
                text, calls = await _ask(ctx, client, specs)
            except Cut as cut:
                # never a normal "done": the user is told why the answer stopped
                await _add(ctx, Message(role="assistant", content=cut.text or None))
                ctx.answer = cut.text
                ctx.status = "capped"
                ctx.error = cut.why
                await ctx.runtime.emit(ctx, Notice(level="warning", message=cut.why))
                break
            said = Message(role="assistant", content=text or None, tool_calls=calls)
            if calls:
                await _add(ctx, said)
            else:
                # stored beside the turn's end: its record waits for the write (settle)
                ctx.messages.append(said)
                record_soon(ctx, said)
                nudge = await Plugins.of(ctx).modes[ctx.mode].on_stop(ctx, text)
                if nudge is None:
                    ctx.answer = text
                    break
                await ctx.runtime.emit(ctx, Notice(level="info", message=nudge.splitlines()[0]))
                await _add(ctx, Message(role="user", content=nudge))  # the mode asks it to go on
                continue
            ended = False
            for call in calls:
                if ended:
                    result = ToolResult(ok=False, content=SKIPPED, status="cancelled")
                else:
                    result = await run_call(ctx, call)
                    ended = result.ends_turn
                await _add(
                    ctx,
                    Message(
                        role="tool",
                        tool_call_id=call.id,
                        name=call.name,
                        content=result.content or result.status,
                    ),
                    status=result.status,
                    details=result.details,
                )
            if ended:
                ctx.answer = ctx.answer or text
                if ctx.handback is not None:
                    ctx.status = "blocked"
                break
    except ModelError as exc:
        ctx.status = "failed"
        ctx.error = str(exc)
        await mf.forget_learned(ctx, client)
        await ctx.runtime.emit(ctx, Notice(level="error", message=ctx.error))


async def _add(
    ctx: TurnContext,
    message: Message,
    *,
    status: str | None = None,
    details: dict[str, Any] | None = None,
) -> None:
    """Into the turn's conversation and, at once, into the store (a crash loses nothing);
    `status` and `details`: a tool result's, stored beside it."""
    ctx.messages.append(message)
    await record(ctx, message, status=status, details=details)
