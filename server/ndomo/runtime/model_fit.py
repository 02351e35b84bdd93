"""The runtime's side of model adaptation: remembered capabilities (per endpoint + model,
in the store), the context window a request must fit, and tool-less models."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from ndomo.llm.budget import Fitted, Sizes, Window, fit
from ndomo.llm.capabilities import Capabilities
from ndomo.llm.errors import ModelContextTooSmall
from ndomo.llm.messages import Message, ToolSpec
from ndomo.runtime.plugins import Plugins

if TYPE_CHECKING:
    from ndomo.runtime.context import TurnContext

log = logging.getLogger("ndomo.runtime")
LOADED = "caps_loaded"
# How long what a server said about itself is taken as still true. A new process within it
# (`ndomo run` in a script) sends no /v1/models, /props or /api/show before its request. Short,
# because Ollama cuts a prompt past a lowered num_ctx silently; a context error, a failed turn
# or `ndomo health` asks again sooner.
FRESH_S = 600.0


def _key(client: Any) -> tuple[str, str]:
    return client.url, client.cfg.name


async def load_caps(ctx: TurnContext, client: Any) -> None:
    """Once per client: what the store remembers, else what the server says about itself."""
    if getattr(client, LOADED, False):
        return
    client.caps_loaded = True
    try:
        store = await ctx.app.store()
        saved = await store.model_caps(*_key(client))
    except Exception:  # noqa: BLE001 - a store problem must not stop a turn; it only costs a re-learn
        log.warning("could not read remembered model capabilities", exc_info=True)
        saved = None
    if saved:
        try:
            client.caps = Capabilities.model_validate(saved)
        except ValueError:
            saved = None
    learned = client.caps.learned_at
    fresh = bool(saved) and learned is not None and 0 <= time.time() - learned < FRESH_S
    if ctx.app.settings.model.context_window is None and not fresh:
        # the server's own numbers may have changed since (Ollama num_ctx)
        await client.learn()
        client.caps.learned_at = time.time()
    client.caps_saved = client.caps.model_dump()
    if not saved or not fresh:
        await save_caps(ctx, client, force=True)


async def forget_learned(ctx: TurnContext, client: Any) -> None:
    """A failed model call: the next process asks the server about itself again."""
    if client.caps.learned_at is not None:
        client.caps.learned_at = None
        await save_caps(ctx, client)


async def save_caps(ctx: TurnContext, client: Any, force: bool = False) -> None:
    now = client.caps.model_dump()
    if not force and now == getattr(client, "caps_saved", None):
        return
    try:
        store = await ctx.app.store()
        await store.save_model_caps(*_key(client), now)
        client.caps_saved = now
    except Exception:  # noqa: BLE001 - remembering is a cache; a failure only costs a re-learn
        log.warning("could not remember model capabilities", exc_info=True)


def window_for(ctx: TurnContext, client: Any) -> Window | None:
    setting = ctx.app.settings.model.context_window
    if setting:
        return Window(setting, "model.context_window", client.caps.bytes_per_token)
    if client.caps.context_window:
        return Window(
            client.caps.context_window,
            f"reported by the server: {client.caps.context_source}",
            client.caps.bytes_per_token,
        )
    return None


def core_tools(ctx: TurnContext, specs: list[ToolSpec]) -> list[ToolSpec]:
    """The mode's and agent's core set: tools marked `core`, among those offered."""
    core = {t.name for t in ctx.tools if t.core}
    return [s for s in specs if s.name in core]


async def fit_request(ctx: TurnContext, client: Any, specs: list[ToolSpec]) -> Fitted:
    window, core = window_for(ctx, client), core_tools(ctx, specs)
    messages = ctx.messages
    sizes = Sizes()  # a second fit (the anchor in) measures only the new system message
    try:
        fitted = fit(messages, specs, window, core_tools=core, sizes=sizes)
    except ModelContextTooSmall:
        fitted = None
    if fitted is None or _dropped(messages, fitted):
        # Compaction: what gave way is replaced by an anchor — the session's first request in
        # the user's own words and the committed plan's task states — so a long session keeps
        # its goal. Fitted again with the anchor in, since it takes room too.
        anchor = await compaction_anchor(ctx)
        if anchor:
            messages = with_anchor(messages, anchor)
        try:
            fitted = fit(messages, specs, window, core_tools=core, sizes=sizes)
        except ModelContextTooSmall:
            # The compact system prompt is built only when the request must give way that far
            # (building it reads the prompt files again: a hop every turn otherwise).
            compact = await Plugins.of(ctx).prompts.build(ctx, compact=True)
            if anchor:
                compact = f"{compact}\n\n{anchor}"
            fitted = fit(
                messages, specs, window, core_tools=core, compact_system=compact, sizes=sizes
            )
        if anchor and _dropped(messages, fitted):
            fitted.steps.append("kept the first request and the plan in a summary")
    return fitted


def _dropped(messages: list[Message], fitted: Fitted) -> bool:
    return len(fitted.messages) < len(messages)


FIRST_REQUEST_CAP = 6000  # characters of the first request kept word for word


async def compaction_anchor(ctx: TurnContext) -> str:
    """The deterministic summary of what a fitted request leaves out (no model call: small
    models cannot afford one). Empty when there is nothing to anchor on."""
    parts: list[str] = []
    first = next((m.content for m in ctx.messages if m.role == "user" and m.content), None)
    if first:
        if len(first) > FIRST_REQUEST_CAP:
            first = (
                f"{first[:FIRST_REQUEST_CAP]}\n[… {len(first) - FIRST_REQUEST_CAP} more characters]"
            )
        parts.append("The session's first request, in the user's words:\n" + quote(first))
    plan_id = ctx.session.committed_plan_id
    if plan_id:
        try:
            plan = await (await ctx.app.store()).get_plan(plan_id)
        except Exception:  # noqa: BLE001 - the anchor is a courtesy: a store problem must not fail the turn
            log.warning("could not read the committed plan for the summary", exc_info=True)
        else:
            lines = [f"The committed plan: {plan.title} ({plan.slug}, {plan.status})"]
            lines += [f"- [{t.status}] {t.ord}. {t.description}" for t in plan.tasks[:40]]
            if len(plan.tasks) > 40:
                lines.append(f"- … {len(plan.tasks) - 40} more tasks")
            parts.append("\n".join(lines))
    if not parts:
        return ""
    return (
        "## Earlier in this session\n"
        "Older messages of this session were left out to fit the model's context window. "
        "Keep to the session's goal:\n\n" + "\n\n".join(parts)
    )


def quote(text: str) -> str:
    return "\n".join("> " + line for line in text.splitlines())


def with_anchor(messages: list[Message], anchor: str) -> list[Message]:
    """The anchor goes at the end of the system message (never a message of its own: the
    conversation stays valid for strict servers)."""
    if messages and messages[0].role == "system":
        return [Message.system(f"{messages[0].content or ''}\n\n{anchor}"), *messages[1:]]
    return [Message.system(anchor), *messages]


def learn_window_from_error(client: Any, err: Any, sent_tokens: int) -> None:
    """A context error: take the server's number, else assume three quarters of what was sent."""
    window = err.window or max(512, int(sent_tokens * 0.75))
    client.caps.context_window = window
    client.caps.context_source = (
        "the server's context error" if err.window else "estimated from a context error"
    )


def tools_refusal(ctx: TurnContext, client: Any) -> str:
    modes = Plugins.of(ctx).modes.values()
    without = [m.name for m in modes if not m.contract.requires_tools]
    switch = (
        f" or switch to a mode that works without them ({', '.join(without)})" if without else ""
    )
    why = f" ({client.caps.tools_source})" if client.caps.tools_source else ""
    return (
        f"model '{client.cfg.name}' at {client.url} does not support tool calling{why}, and {ctx.mode} mode needs "
        f"tools to act; use a model with tool support (e.g. qwen2.5-coder){switch}"
    )


__all__ = [
    "Message",
    "fit_request",
    "load_caps",
    "save_caps",
    "window_for",
    "tools_refusal",
    "learn_window_from_error",
]
