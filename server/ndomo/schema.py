"""The base of ndomo's pydantic models: built when first used, not when imported.

Building a model's validator is most of what importing ndomo costs (183 models, ~0.15 s
of the ~0.4 s that building the runtime's registries takes at start-up), and most are not
used before the first answer — tool parameters wait for a turn, plan models for a plan.
`defer_build` moves each model's build to its first use; the warm-up (ndomo.lsp.warmup)
builds the rest in the background once the server has answered, so the first turn does
not pay for them either.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Schema(BaseModel):
    model_config = ConfigDict(defer_build=True)


def build_all() -> int:
    """Build every deferred model imported so far; returns how many were built."""
    built = 0
    todo = list(Schema.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if not cls.__pydantic_complete__:
            try:
                cls.model_rebuild()
            except Exception:  # noqa: BLE001 — built on first use instead, which reports it
                continue
            built += 1
    return built
