"""`session.rewind`: go back to the moment before one of the session's prompts.

- code: every file the turn and the later ones changed (their edits and shell commands,
  created, changed or deleted, tracked or not) goes back to the turn's start checkpoint.
  A file only the user changed (between two turns, or since the last) is left alone; one
  both changed is named, and nothing is written unless `force`.
- conversation: the turn's messages and every later one leave the conversation the model
  is sent (their rows stay, marked).

A rewind is itself recorded as a turn (agent `rewind`) with checkpoints of the files before
and after it, so rewinding to that turn takes the rewind back.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Literal, TypeVar

from pydantic import ConfigDict, Field, StrictBool

from ndomo.actions import ActionError, action, store_of
from ndomo.app import App
from ndomo.features.checkpoints import shadow_of
from ndomo.features.checkpoints.shadow import CheckpointError
from ndomo.runtime.history import forget_history
from ndomo.schema import Schema
from ndomo.store.checkpoints import Checkpoint
from ndomo.store.errors import StoreError
from ndomo.store.models import Turn

T = TypeVar("T")
REWIND_AGENT = "rewind"
# Records of ndomo's own file operations, not the user's prompts (`review`: an applied review).
RECORDS = ("rewind", "undo", "review")


class RewindParams(Schema):
    model_config = ConfigDict(extra="forbid")
    turn: int | None = Field(default=None, description="The turn id to go back before.")
    prompt: int | None = Field(
        default=None,
        description="Or the prompt's place in the session: 1 the first, -1 the last.",
    )
    what: Literal["code", "conversation", "both"] = Field(
        default="both", description="What goes back: the files, the conversation, or both."
    )
    force: StrictBool = Field(
        default=False, description="Overwrite files the user changed after the turn."
    )
    session: str | None = Field(default=None, description="Session id (the current one if unset).")


class RewindResult(Schema):
    turn_id: int
    prompt: str | None = None
    restored: list[str] = []
    messages_dropped: int = 0
    notes: list[str] = []
    message: str


def _prompts(turns: list[Turn]) -> list[Turn]:
    return [t for t in turns if t.parent_turn_id is None and t.agent not in RECORDS]


def _target(turns: list[Turn], p: RewindParams) -> Turn:
    if (p.turn is None) == (p.prompt is None):
        raise ActionError("give either turn (an id) or prompt (a place)", field="turn")
    if p.turn is not None:
        found = next((t for t in turns if t.id == p.turn and t.parent_turn_id is None), None)
        if found is None:
            raise ActionError(f"no turn {p.turn} in this session", field="turn")
        return found
    prompts = _prompts(turns)
    assert p.prompt is not None
    index = p.prompt - 1 if p.prompt > 0 else len(prompts) + p.prompt
    if p.prompt == 0 or not 0 <= index < len(prompts):
        raise ActionError(
            f"no prompt {p.prompt}: the session has {len(prompts)} prompt(s)", field="prompt"
        )
    return prompts[index]


def by_turn(checkpoints: list[Checkpoint], kind: str) -> dict[int, str]:
    """turn id → its checkpoint of `kind` (the first start, the last end)."""
    out: dict[int, str] = {}
    for c in checkpoints:
        if c.kind != kind or c.turn_id is None:
            continue
        if kind == "turn_end" or c.turn_id not in out:
            out[c.turn_id] = c.commit_id
    return out


async def _who_changed(
    app: App, later: list[Turn], checkpoints: list[Checkpoint], now: str
) -> tuple[set[str], set[str]]:
    """The files the turns changed (each turn's start to its end: its edits and commands)
    and those changed while no turn ran (one turn's end to the next one's start, and the
    last one's end to `now`): the agent's, the user's."""
    shadow = shadow_of(app)
    starts, ends = by_turn(checkpoints, "turn_start"), by_turn(checkpoints, "turn_end")
    agents: set[str] = set()
    users: set[str] = set()
    last_end: str | None = None
    for i, turn in enumerate(later):
        start = starts.get(turn.id)
        if start is None:
            continue
        if last_end is not None:
            users |= set(await shadow.diff(last_end, start))
        # A turn without an end (its process died): up to the next start, or now.
        nxt = next((starts[t.id] for t in later[i + 1 :] if t.id in starts), now)
        end = ends.get(turn.id, nxt)
        agents |= set(await shadow.diff(start, end))
        last_end = end
    if last_end is not None:
        users |= set(await shadow.diff(last_end, now))
    return agents, users


@action(
    "session.rewind",
    RewindParams,
    summary="Go back to before a prompt of the session: its files, its conversation, or both",
)
async def rewind(app: App, p: RewindParams) -> RewindResult:
    return await in_session(
        app,
        p.session,
        lambda session_id: _rewind(app, session_id, p),
        busy="a turn is running in this session; cancel it first",
    )


async def in_session(
    app: App, session: str | None, run: Callable[[str], Awaitable[T]], *, busy: str
) -> T:
    """`run(session id)` while no turn runs in the session: claimed in the store, so no turn
    of another process starts meanwhile. Typed as a slash command (`/session rewind …`,
    `/review apply …`), the command's own turn holds the claim already."""
    from ndomo.runtime.runtime import Runtime

    rt = Runtime.of(app)
    state = await rt.session(session)
    running = rt.active.get(state.id)
    if running is not None:
        ctx = running[0]
        if ctx.turn_id is not None or not ctx.request.prompt.lstrip().startswith("/"):
            raise ActionError(busy, kind="failed")
        return await run(state.id)
    async with store_of(app) as store:
        await store.claim_session(state.id)
        try:
            return await run(state.id)
        finally:
            await store.release_session(state.id)


async def _rewind(app: App, session_id: str, p: RewindParams) -> RewindResult:
    store = await app.store()
    turns = await store.list_turns(session_id, limit=1_000_000)
    target = _target(turns, p)
    restored: list[str] = []
    notes: list[str] = []
    record = None
    if p.what in ("code", "both"):
        checkpoints = await store.session_checkpoints(session_id)
        start = by_turn(checkpoints, "turn_start").get(target.id)
        if start is None:
            raise ActionError(
                f"turn {target.id} has no checkpoint (taken from the first tool call of a turn "
                "on): its files cannot be put back",
                field="turn",
            )
        shadow = shadow_of(app)
        try:
            now = await shadow.snapshot(f"before rewinding to turn {target.id}")
            notes += now.notes
            later = [t for t in turns if t.parent_turn_id is None and t.id >= target.id]
            agents, users = await _who_changed(app, later, checkpoints, now.commit)
            conflicts = sorted(agents & users)
            if conflicts and not p.force:
                raise ActionError(
                    f"not rewinding: changed after the agent's turns: {', '.join(conflicts)} "
                    "(force overwrites them)",
                    field="force",
                    kind="failed",
                )
            record = await store.start_turn(
                session_id, REWIND_AGENT, None, f"rewind to turn {target.id} ({p.what})"
            )
            await store.add_checkpoint(session_id, record.id, "turn_start", now.commit, None)
            restored = await shadow.restore(start, now.commit, only=agents)
            after = await shadow.snapshot(f"rewound to turn {target.id}")
            await store.add_checkpoint(session_id, record.id, "turn_end", after.commit, None)
        except CheckpointError as exc:
            if record is not None:
                await store.finish_turn(record.id, "failed", error=str(exc))
            raise ActionError(f"rewind failed: {exc}", kind="failed") from None
    dropped = 0
    if p.what in ("conversation", "both"):
        try:
            dropped = await store.rewind_messages(session_id, target.id)
        except StoreError as exc:
            raise ActionError(exc.message, kind="failed") from None
        forget_history(app, session_id)
    if record is not None:
        await store.finish_turn(record.id, "done")
    parts = [f"rewound to before turn {target.id}"]
    if p.what != "conversation":
        parts.append(f"files put back: {', '.join(restored) or 'none'}")
    if p.what != "code":
        parts.append(f"{dropped} message(s) left the conversation")
    parts += notes
    return RewindResult(
        turn_id=target.id,
        prompt=target.prompt,
        restored=restored,
        messages_dropped=dropped,
        notes=notes,
        message="; ".join(parts),
    )


@action(
    "rewind",
    RewindParams,
    summary="Go back to before a prompt (the same as `ndomo session rewind`)",
)
async def rewind_short(app: App, p: RewindParams) -> RewindResult:
    return await rewind(app, p)
