"""Checkpoints: the workspace's files snapshotted at each turn's start and end and before
each shell command, so a rewind can put back any earlier state (see `rewind`).

- The turn's snapshot is started at PRE_DISPATCH (the prefetch pattern) and begins once the
  model's first event arrives (`ctx.answering`), so it overlaps the answer, not the wait
  for the first token; a guard waits for it before the turn's first tool runs, whatever
  the tool, and records it on the turn.
- Before a command (`bash`, `serve`: the `execute` class) the guard takes another one.
- At the turn's end (FINALLY) the end snapshot: what a later rewind compares with to find
  the user's own changes. A turn that ran no tool but reads (an answer, a search) changed
  nothing of the agent's: its start snapshot is recorded as its end, and no git process
  delays the turn's end (a file the user saved meanwhile then counts as the user's).

A snapshot that fails (no git, a full disk) is a warning notice; the turn goes on.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from pydantic import BaseModel

from ndomo.app import App
from ndomo.features.checkpoints.shadow import CheckpointError, Shadow, Snapshot
from ndomo.runtime.context import TurnContext
from ndomo.runtime.events import Notice
from ndomo.runtime.hooks import HookResult, LifecycleHook, Phase
from ndomo.runtime.prefetch import Prefetch, take
from ndomo.runtime.tools import ToolDescriptor, ToolGuard

if TYPE_CHECKING:
    from ndomo.runtime.plugins import Plugins

log = logging.getLogger("ndomo.checkpoints")

_KEY = "checkpoints.turn_start"


def shadow_of(app: App) -> Shadow:
    return app.instance(Shadow, lambda: Shadow(app.root))


def _top(ctx: TurnContext) -> TurnContext:
    while ctx.parent is not None:
        ctx = ctx.parent
    return ctx


class _TurnMarks:
    """Per top-level turn: what was recorded already."""

    def __init__(self) -> None:
        self.start_recorded = False
        self.start: Snapshot | None = None
        self.wrote = False  # a tool ran that may change files (any but a read)


async def _snapshot(ctx: TurnContext, message: str) -> Snapshot | None:
    try:
        snap = await shadow_of(ctx.app).snapshot(message)
    except (CheckpointError, OSError) as exc:
        log.warning("checkpoint failed: %s", exc)
        await ctx.runtime.emit(ctx, Notice(level="warning", message=f"checkpoint not taken: {exc}"))
        return None
    for note in snap.notes:
        await ctx.runtime.emit(ctx, Notice(level="warning", message=f"checkpoint: {note}"))
    return snap


async def _turn_start(ctx: TurnContext) -> Snapshot | None:
    # Once the model's first event arrived: the snapshot's git process then does not
    # compete with the request for the CPU while the first token is awaited, and it still
    # ends before the turn's first tool runs (the guard waits for it).
    await _top(ctx).answering.wait()
    return await _snapshot(ctx, f"before a turn of session {ctx.session.id}")


async def _take_start(top: TurnContext) -> tuple[Snapshot | None, bool]:
    """The turn's start snapshot (taken, or taken now) and whether it is yet to be
    recorded on the turn (True once: the caller records it)."""
    marks = top.instance(_TurnMarks, _TurnMarks)
    if marks.start_recorded or top.turn_id is None:
        return marks.start, False
    marks.start_recorded = True
    snap = marks.start = await take(top, _KEY, _turn_start)
    return snap, snap is not None


async def _record_start(ctx: TurnContext) -> Snapshot | None:
    """The turn's start snapshot (taken, or taken now), recorded once on the turn."""
    top = _top(ctx)
    snap, unrecorded = await _take_start(top)
    if unrecorded and snap is not None:
        store = await top.app.store()
        await store.add_checkpoint(top.session.id, top.turn_id, "turn_start", snap.commit, None)
    return snap


def _applies(ctx: TurnContext) -> bool:
    """Top-level turns; a slash command's turn records nothing."""
    return ctx.depth == 0 and not ctx.request.prompt.lstrip().startswith("/")


class CheckpointGuard(ToolGuard):
    """Before any tool: the turn's start snapshot is done; before a command, one more."""

    name = "checkpoints"

    async def check(self, ctx: TurnContext, tool: ToolDescriptor, params: BaseModel) -> str | None:
        _top(ctx).answering.set()  # a tool runs before any model event (a hook's): start now
        await _record_start(ctx)
        if tool.tool_kind != "read":
            _top(ctx).instance(_TurnMarks, _TurnMarks).wrote = True
        if tool.tool_kind == "execute":
            command = tool.command(params) if tool.command else None
            snap = await _snapshot(ctx, f"before {tool.name}: {command or ''}")
            top = _top(ctx)
            if snap is not None and top.turn_id is not None:
                store = await ctx.app.store()
                await store.add_checkpoint(
                    top.session.id, top.turn_id, "command", snap.commit, command
                )
        return None


class TurnEndCheckpoint(LifecycleHook):
    phase = Phase.FINALLY
    name = "checkpoint_turn_end"
    priority = 80

    def applies(self, ctx: TurnContext) -> bool:
        return ctx.depth == 0 and ctx.turn_id is not None

    async def run(self, ctx: TurnContext) -> HookResult | None:
        start, unrecorded = await _take_start(ctx)
        rows = [("turn_start", start.commit, None)] if unrecorded and start is not None else []
        # Of the disk: agent edits an editor still holds unsaved are not in it (they stay
        # unsaved, undoable there; saved later, a rewind counts them as the user's).
        wrote = ctx.instance(_TurnMarks, _TurnMarks).wrote
        snap = start if start is not None and not wrote else None
        if snap is None:
            snap = await _snapshot(ctx, f"after turn {ctx.turn_id}")
        if snap is not None:
            rows.append(("turn_end", snap.commit, None))
        if rows and ctx.turn_id is not None:
            # a turn that ran no tool records its start here: both rows in one hop, on the
            # way to the turn's answer
            store = await ctx.app.store()
            await store.add_checkpoints(ctx.session.id, ctx.turn_id, rows)
        return None


def setup(plugins: Plugins) -> None:
    plugins.hooks.add(Prefetch("checkpoint_turn_start", _KEY, _turn_start, applies=_applies))
    plugins.hooks.add(TurnEndCheckpoint())
    plugins.tools.guards.append(CheckpointGuard())
