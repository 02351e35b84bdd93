"""Typed listener lists: one registration point (`add`) and one way to tell them all
(`notify`), where a failing listener is logged with what it was told and never stops the
others. Used for the runtime's status and turn-event listeners and the session-end hooks."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterator
from typing import Generic, ParamSpec

log = logging.getLogger("ndomo.runtime")

P = ParamSpec("P")


class Listeners(Generic[P]):
    """`Listeners[[Status]]("status")`: async callables taking a Status, told in order."""

    def __init__(self, what: str) -> None:
        self.what = what
        self._fns: list[Callable[P, Awaitable[object]]] = []

    def add(self, fn: Callable[P, Awaitable[object]]) -> None:
        self._fns.append(fn)

    def remove(self, fn: Callable[P, Awaitable[object]]) -> None:
        self._fns.remove(fn)

    def __iter__(self) -> Iterator[Callable[P, Awaitable[object]]]:
        return iter(list(self._fns))

    def __len__(self) -> int:
        return len(self._fns)

    async def notify(self, *args: P.args, **kwargs: P.kwargs) -> None:
        for fn in list(self._fns):
            try:
                await fn(*args, **kwargs)
            except Exception:
                log.exception("%s listener %s failed", self.what, getattr(fn, "__qualname__", fn))
