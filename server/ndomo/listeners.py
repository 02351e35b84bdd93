"""Typed listener lists: every list of callbacks in ndomo is one (`ndomo.runtime.extensions`
lists them). One registration point (`add`) and one way to tell them all (`notify`): in
order, a failing listener logged with what it was told and never stopping the others.

A listener may be a plain or an async function, and may answer: `notify` returns the
answers that are not None (the notes for a write's result, a feature's quick fixes), and
`failed` turns a failure into an answer where the caller must say what failed.

It sits on the bottom floor, beside `schema.py`, so the store (which knows no runtime)
uses it too.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Iterator
from typing import Any, Concatenate, Generic, ParamSpec

log = logging.getLogger("ndomo.listeners")

P = ParamSpec("P")


class Listeners(Generic[P]):
    """`Listeners[[Status]]("status")`: callables taking a Status, told in order."""

    def __init__(
        self, what: str, *, failed: Callable[Concatenate[Exception, P], Any] | None = None
    ) -> None:
        self.what = what
        self.failed = failed  # a failure → the answer in its place (None: no answer)
        self._fns: list[Callable[P, Any]] = []

    def add(self, fn: Callable[P, Any]) -> None:
        self._fns.append(fn)

    def remove(self, fn: Callable[P, Any]) -> None:
        self._fns.remove(fn)

    def __contains__(self, fn: object) -> bool:
        return fn in self._fns

    def __iter__(self) -> Iterator[Callable[P, Any]]:
        return iter(list(self._fns))

    def __len__(self) -> int:
        return len(self._fns)

    async def notify(self, *args: P.args, **kwargs: P.kwargs) -> list[Any]:
        """Tell every listener; what they answered, in order (None answers left out)."""
        answers = []
        for fn in list(self._fns):
            try:
                answer = fn(*args, **kwargs)
                if inspect.isawaitable(answer):
                    answer = await answer
            except Exception as exc:  # noqa: BLE001 - one listener's failure is its own: logged, the others are still told
                log.exception("%s listener %s failed", self.what, getattr(fn, "__qualname__", fn))
                answer = self.failed(exc, *args, **kwargs) if self.failed is not None else None
            if answer is not None:
                answers.append(answer)
        return answers
