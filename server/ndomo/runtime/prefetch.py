"""Reads a turn needs later, started when the turn starts.

A turn's set-up waits on several hops to other threads in a row (the store's turn rows,
prompt files, the reflex folder's stamps), and the first token waits for all of them. A
read that does not depend on the store's bookkeeping is started by a `Prefetch` hook at
PRE_DISPATCH, so it runs while those hops do; the feature that needs it later calls
`take`, which waits for the started read (or runs it, when nothing started it).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ndomo.runtime.hooks import HookResult, LifecycleHook, Phase

if TYPE_CHECKING:
    from ndomo.runtime.context import TurnContext

log = logging.getLogger("ndomo.runtime")

Read = Callable[["TurnContext"], Awaitable[Any]]


def _retrieved(fut: asyncio.Future) -> None:
    """A read nobody took (a slash command ended the turn) must not warn at exit;
    whoever takes it gets its error as if it had run the read itself."""
    if not fut.cancelled() and fut.exception() is not None:
        log.debug("prefetched read failed", exc_info=fut.exception())


class _Started:
    """Per turn: the reads started so far, by their feature's key."""

    def __init__(self) -> None:
        self.reads: dict[str, asyncio.Future[Any]] = {}


def start(ctx: TurnContext, key: str, read: Read) -> None:
    fut = asyncio.ensure_future(read(ctx))
    fut.add_done_callback(_retrieved)
    ctx.instance(_Started, _Started).reads[key] = fut


def adopt(ctx: TurnContext, key: str, fut: asyncio.Future[Any]) -> None:
    """Make a read started before the turn's context existed (the runtime starts the
    history's behind the session's claim) this turn's, under `key`."""
    fut.add_done_callback(_retrieved)
    ctx.instance(_Started, _Started).reads[key] = fut


async def take(ctx: TurnContext, key: str, read: Read) -> Any:
    """The result of the read started for this turn under `key`, else of `read` now."""
    started = ctx.existing(_Started)
    fut = started.reads.get(key) if started is not None else None
    if fut is None:
        return await read(ctx)
    return await asyncio.shield(fut)


async def settle(ctx: TurnContext) -> None:
    """Waits for the reads started for this turn that nobody took (a turn that ended
    before needing them): none outlives its turn, to run on after the app closed or to
    be cancelled mid-write by a closing loop."""
    started = ctx.existing(_Started)
    pending = [f for f in started.reads.values() if not f.done()] if started else []
    if pending:
        await asyncio.wait(pending)


class Prefetch(LifecycleHook):
    """Starts `read` at the turn's start; the feature reads the result with `take`."""

    phase = Phase.PRE_DISPATCH

    def __init__(
        self,
        name: str,
        key: str,
        read: Read,
        applies: Callable[[TurnContext], bool] | None = None,
    ) -> None:
        self.name = name
        self.key = key
        self.read = read
        self._applies = applies

    def applies(self, ctx: TurnContext) -> bool:
        return self._applies is None or self._applies(ctx)

    async def run(self, ctx: TurnContext) -> HookResult | None:
        start(ctx, self.key, self.read)
        return None
