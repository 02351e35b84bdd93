"""Tool-call lifecycle: pending → running → done | failed | cancelled, one id per call.

Cancelling one call tells the model "cancelled by the user" and the turn goes on;
cancelling the turn cancels every call still running.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from ndomo.runtime.tools import ToolResult

CANCELLED_TEXT = "cancelled by the user"


@dataclass
class CallEntry:
    id: str
    name: str
    turn_id: int | None
    status: str = "pending"
    task: asyncio.Task | None = None
    result: ToolResult | None = None
    user_cancelled: bool = field(default=False)


class ToolCallCoordinator:
    def __init__(self) -> None:
        self.calls: dict[str, CallEntry] = {}

    def new(self, name: str, turn_id: int | None, call_id: str | None = None) -> CallEntry:
        entry = CallEntry(id=call_id or f"call_{uuid.uuid4().hex[:12]}", name=name, turn_id=turn_id)
        self.calls[entry.id] = entry
        return entry

    async def run(self, entry: CallEntry, work: Callable[[], Awaitable[ToolResult]]) -> ToolResult:
        if entry.user_cancelled:  # cancelled while still pending: never start it
            entry.status = "cancelled"
            entry.result = ToolResult(ok=False, content=CANCELLED_TEXT, status="cancelled")
            return entry.result
        entry.status = "running"
        entry.task = asyncio.ensure_future(work())
        try:
            result = await asyncio.shield(entry.task)
        except asyncio.CancelledError:
            if entry.user_cancelled:
                entry.status = "cancelled"
                entry.result = ToolResult(ok=False, content=CANCELLED_TEXT, status="cancelled")
                return entry.result
            # the turn itself is being cancelled: stop the call too, then propagate
            entry.task.cancel()
            entry.status = "cancelled"
            raise
        entry.status = (
            "done" if result.ok else ("cancelled" if result.status == "cancelled" else "failed")
        )
        entry.result = result
        return result

    def cancel(self, call_id: str) -> bool:
        entry = self.calls.get(call_id)
        if entry is None or entry.status not in ("pending", "running"):
            return False
        entry.user_cancelled = True
        if entry.task is not None and not entry.task.done():
            entry.task.cancel()
        return True

    def running(self, turn_id: int | None = None) -> list[CallEntry]:
        return [
            e
            for e in self.calls.values()
            if e.status in {"pending", "running"} and (turn_id is None or e.turn_id == turn_id)
        ]

    def cancel_turn(self, turn_id: int | None) -> None:
        for e in self.running(turn_id):
            if e.task is not None:
                e.task.cancel()
            e.status = "cancelled"

    def forget_turn(self, turn_id: int | None) -> None:
        for cid in [c for c, e in self.calls.items() if e.turn_id == turn_id]:
            del self.calls[cid]
