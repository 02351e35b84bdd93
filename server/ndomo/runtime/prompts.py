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

    def applies(self, ctx: "TurnContext") -> bool:
        return True

    async def contribute(self, ctx: "TurnContext") -> str | None:  # pragma: no cover - interface
        raise NotImplementedError


class ModePromptContributor(PromptContributor):
    """A contributor that speaks only while its mode is active."""

    mode: str

    def applies(self, ctx: "TurnContext") -> bool:
        return ctx.mode == self.mode


class PromptManager:
    def __init__(self) -> None:
        self._contributors: list[PromptContributor] = []

    def add(self, contributor: PromptContributor) -> None:
        if any(c.name == contributor.name for c in self._contributors):
            raise ValueError(f"prompt contributor {contributor.name!r} registered twice")
        self._contributors.append(contributor)
        self._contributors.sort(key=lambda c: (c.priority, c.name))

    @property
    def contributors(self) -> list[PromptContributor]:
        return list(self._contributors)

    async def build(self, ctx: "TurnContext") -> str:
        parts = []
        for c in self._contributors:
            if not c.applies(ctx):
                continue
            try:
                fragment = await c.contribute(ctx)
            except Exception:
                log.exception("prompt contributor %s failed; skipped", c.name)
                continue
            if fragment and fragment.strip():
                parts.append(fragment.strip())
        return "\n\n".join(parts)
