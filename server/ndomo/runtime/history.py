"""A session's conversation: stored as it happens, read back for the next turn, trimmed
only on the way to the model.

`model_history` is the one place the budget is applied, so a smarter trimmer (a context
budget in tokens) replaces one function.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from ndomo.llm.budget import chars, trim_to_chars
from ndomo.llm.messages import Message, ToolCall

if TYPE_CHECKING:
    from ndomo.runtime.context import TurnContext
    from ndomo.store.messages import StoredMessage

log = logging.getLogger("ndomo.runtime")

SKIPPED = "not run: the turn ended before this call"


def to_message(m: StoredMessage) -> Message:
    calls = [
        ToolCall(
            id=c["id"],
            name=c["name"],
            arguments=c.get("arguments") or {},
            raw_arguments=c.get("raw", ""),
        )
        for c in m.tool_calls
    ]
    return Message(
        role=m.role,  # type: ignore[arg-type]  # the store holds only roles written from a Message
        content=m.content,
        tool_calls=calls,
        tool_call_id=m.tool_call_id,
        name=m.name,
    )


class _Read:
    """Per App: each session's conversation as read so far (made valid), the id of its
    newest message, and its characters of content. Messages are append-only, so a turn
    reads only those added since the last turn (by this process or another) and makes only
    those valid: the stored history grows every turn, reading it does not. The characters
    (the measure of `history_chars`) are summed as it grows: while all of it fits,
    `model_history` keeps it without walking it (a walk of the whole conversation every
    turn made a turn's set-up grow with the session: 0.2 ms at 100 turns on a 2-core VM)."""

    def __init__(self) -> None:
        self.sessions: dict[str, tuple[int, list[Message], int]] = {}


HISTORY_KEY = "history"


def read_soon(app: Any, session_id: str) -> asyncio.Future[tuple[int, list[StoredMessage]]]:
    """Start the read of what `session_id` stored since this App last read it: (the id
    it read after, the messages). Started right behind the session's claim, it is queued
    on the store's thread after the claim's write and runs while the claim's answer comes
    back: the turn's set-up waits for one hop fewer (`load_history` takes it)."""
    last = app.instance(_Read, _Read).sessions.get(session_id, (0, [], 0))[0]

    async def read() -> tuple[int, list[StoredMessage]]:
        store = await app.store()
        return last, await store.session_messages(session_id, after_id=last)

    return asyncio.ensure_future(read())


async def load_history(ctx: TurnContext) -> list[Message]:
    """The session's whole stored conversation (top-level turns), made a valid one
    (a tool call left unanswered by a crash or a cancel gets a 'not run' result)."""
    from ndomo.runtime import prefetch

    read = ctx.app.instance(_Read, _Read)
    last, valid, size = read.sessions.get(ctx.session.id, (0, [], 0))
    after, stored = await prefetch.take(ctx, HISTORY_KEY, lambda c: read_soon(c.app, c.session.id))
    if after != last:  # read before this App's last read moved (not under one claim)
        after, stored = await read_soon(ctx.app, ctx.session.id)
    if stored:
        # A read happens at a turn's start, under the session's claim: what was stored
        # since the last read begins with a turn's user message, never with the result of
        # a call read before, so the new part is made valid on its own.
        new = close_dangling([to_message(m) for m in stored])
        valid = [*valid, *new]
        read.sessions[ctx.session.id] = (stored[-1].id, valid, size + sum(map(chars, new)))
    return valid


def forget_history(app: Any, session_id: str) -> None:
    """Drop this App's read of a session's conversation (a rewind took messages back):
    the next turn reads it whole again."""
    read = app.existing(_Read)
    if read is not None:
        read.sessions.pop(session_id, None)


def model_history(ctx: TurnContext, history: list[Message]) -> list[Message]:
    """What of the history goes to the model: whole exchanges, newest first, within budget."""
    budget = ctx.app.settings.history_chars
    read = ctx.app.existing(_Read)
    kept = read.sessions.get(ctx.session.id) if read is not None else None
    if (
        kept is not None
        and kept[1] is history
        and kept[2] <= budget
        and (not history or history[0].role == "user")
    ):
        return history  # all of it fits: what `trim_history` would keep, unwalked
    return trim_history(history, budget)


class _Pending:
    """Per turn: the write `record_soon` started, not awaited yet."""

    def __init__(self) -> None:
        self.write: asyncio.Future[None] | None = None


def record_soon(ctx: TurnContext, message: Message) -> None:
    """Store `message` without waiting for the write: the turn's user message is stored once
    the model's first event went out, or 50 ms after (`TurnContext.first_event`; its store
    transaction is several hops to the database thread, which the first token used to wait
    for, then ran beside); the final answer beside the turn's end (its checkpoint rows), one
    wait on the store's thread fewer before the turn's result. The next `record` and the
    turn's end (`settle`) wait for it, so the stored order is the turn's order and nothing
    is lost."""
    pending = ctx.instance(_Pending, _Pending)
    previous = pending.write

    async def write() -> None:
        if previous is not None:
            await previous
        await ctx.first_event()  # behind the first token, not beside the request
        await _store(ctx, message)

    # Not the turn's task: a cancelled turn still stores what it was asked.
    pending.write = asyncio.ensure_future(write())


async def settle(ctx: TurnContext) -> None:
    """Wait for the write `record_soon` started (no-op when none)."""
    pending = ctx.existing(_Pending)
    if pending is not None and pending.write is not None:
        write, pending.write = pending.write, None
        await asyncio.shield(write)


async def record(
    ctx: TurnContext,
    message: Message,
    *,
    status: str | None = None,
    details: dict[str, Any] | None = None,
) -> None:
    """Store one message of the turn as it happens (`status` and `details`: a tool result's,
    for the views that show the conversation again); a store failure is logged, the turn
    goes on."""
    await settle(ctx)
    await _store(ctx, message, status, details)


async def _store(
    ctx: TurnContext,
    message: Message,
    status: str | None = None,
    details: dict[str, Any] | None = None,
) -> None:
    if message.role == "system":
        return
    try:
        store = await ctx.app.store()
        await store.add_message(
            ctx.session.id,
            message.role,
            message.content,
            turn_id=ctx.turn_id or None,
            tool_calls=[
                {"id": c.id, "name": c.name, "arguments": c.arguments, "raw": c.wire_arguments()}
                for c in message.tool_calls
            ],
            tool_call_id=message.tool_call_id,
            name=message.name,
            status=status,
            details=details,
        )
    except Exception:  # noqa: BLE001 - the conversation goes on; a message not stored is logged
        log.exception("could not store a message of session %s", ctx.session.id)


def trim_history(messages: list[Message], budget: int) -> list[Message]:
    """Drop whole exchanges from the front until the rest fits `budget` characters; the
    latest exchange is always kept (see ndomo.llm.budget for the token-budget twin)."""
    return trim_to_chars(messages, budget)


def close_dangling(messages: list[Message]) -> list[Message]:
    """Answer every tool call left without a result (a cancelled turn), and drop a tool
    result whose call is not in the assistant message before it (that message failed to
    be stored), so the history stays a valid conversation for the next request: strict
    servers refuse a request with either, and would refuse every later turn."""
    out: list[Message] = []
    pending: list[ToolCall] = []
    for m in messages:
        if m.role == "tool":
            if not any(c.id == m.tool_call_id for c in pending):
                log.warning("dropped a stored tool result without its call (%s)", m.tool_call_id)
                continue
            pending = [c for c in pending if c.id != m.tool_call_id]
        else:
            out.extend(
                Message(role="tool", tool_call_id=c.id, name=c.name, content=SKIPPED)
                for c in pending
            )
            pending = list(m.tool_calls) if m.role == "assistant" else []
        out.append(m)
    out.extend(
        Message(role="tool", tool_call_id=c.id, name=c.name, content=SKIPPED) for c in pending
    )
    return out
