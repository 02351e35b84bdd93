"""The system prompt, assembled from prioritised contributors; a failing one is skipped."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ndomo.runtime.context import TurnContext

log = logging.getLogger("ndomo.runtime")


class PromptContributor:
    name: str = "contributor"
    priority: int = 100  # lower appears earlier

    def applies(self, ctx: TurnContext) -> bool:
        return True

    # "system": part of the stable system prompt (byte-identical across a session's turns
    # for one agent and mode, so prompt caches hit); "turn": per-turn context, appended to
    # the latest user message instead.
    placement: str = "system"

    async def contribute(self, ctx: TurnContext) -> str | None:  # pragma: no cover - interface
        raise NotImplementedError

    async def compact(self, ctx: TurnContext) -> str | None:
        """The fragment when the context window is tight; by default the same."""
        return await self.contribute(ctx)


class ModePromptContributor(PromptContributor):
    """A contributor that speaks only while its mode is active."""

    mode: str

    def applies(self, ctx: TurnContext) -> bool:
        return ctx.mode == self.mode


class PromptManager:
    def __init__(self) -> None:
        self._contributors: list[PromptContributor] = []

    def add(self, contributor: PromptContributor) -> None:
        if any(c.name == contributor.name for c in self._contributors):
            raise ValueError(f"prompt contributor {contributor.name!r} registered twice")
        self._contributors.append(contributor)
        self._contributors.sort(key=lambda c: (c.priority, c.name))

    async def build(
        self, ctx: TurnContext, *, compact: bool = False, placement: str = "system"
    ) -> str:
        """The system prompt (or, with placement="turn", the per-turn context)."""
        parts = []
        for c in self._contributors:
            if c.placement != placement or not c.applies(ctx):
                continue
            try:
                fragment = await (c.compact(ctx) if compact else c.contribute(ctx))
            except Exception:  # noqa: BLE001 - a broken contributor is skipped, the prompt is still built
                log.exception("prompt contributor %s failed; skipped", c.name)
                continue
            if fragment and fragment.strip():
                parts.append(fragment.strip())
        return "\n\n".join(parts)


def add_to_prompt(ctx: TurnContext, text: str) -> None:
    """Per-turn context goes into the latest user message, never the system prompt or an
    early message, so the prefix a prompt cache keeps stays byte-identical."""
    for m in reversed(ctx.messages):
        if m.role == "user":
            m.content = f"{m.content or ''}\n\n{text}".strip()
            return
