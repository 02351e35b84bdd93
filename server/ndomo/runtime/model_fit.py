"""The runtime's side of model adaptation: remembered capabilities (per endpoint + model,
in the store), the context window a request must fit, and tool-less models."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ndomo.llm.budget import Fitted, Window, fit
from ndomo.llm.capabilities import Capabilities
from ndomo.llm.errors import ModelContextTooSmall
from ndomo.llm.messages import Message, ToolSpec

if TYPE_CHECKING:
    from ndomo.runtime.context import TurnContext

log = logging.getLogger("ndomo.runtime")
LOADED = "caps_loaded"


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
    if ctx.app.settings.model.context_window is None:
        await (
            client.learn()
        )  # once per process: the server's own numbers may have changed (Ollama num_ctx)
    client.caps_saved = client.caps.model_dump()
    if not saved:
        await save_caps(ctx, client, force=True)


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
    try:
        return fit(ctx.messages, specs, window, core_tools=core)
    except ModelContextTooSmall:
        # The compact system prompt is built only when the request must give way that far
        # (building it reads the prompt files again: a hop every turn otherwise).
        compact = await ctx.runtime.plugins.prompts.build(ctx, compact=True)
        return fit(ctx.messages, specs, window, core_tools=core, compact_system=compact)


def learn_window_from_error(client: Any, err: Any, sent_tokens: int) -> None:
    """A context error: take the server's number, else assume three quarters of what was sent."""
    window = err.window or max(512, int(sent_tokens * 0.75))
    client.caps.context_window = window
    client.caps.context_source = (
        "the server's context error" if err.window else "estimated from a context error"
    )


def tools_refusal(ctx: TurnContext, client: Any) -> str:
    modes = ctx.runtime.plugins.modes.values()
    without = [m.name for m in modes if not m.contract.requires_tools]
    switch = (
        f" or switch to a mode that works without them ({', '.join(without)})" if without else ""
    )
    return (
        f"model '{client.cfg.name}' at {client.url} does not support tool calling, and {ctx.mode} mode needs "
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
