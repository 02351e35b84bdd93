"""A running tool call's output, streamed to the editor as `tool_output` events.

What the model gets is unchanged (the tool's bounded, spilled result); this is only the
live view. Bytes are decoded incrementally (a split UTF-8 character is not mangled),
bursts are merged (at most one event per FLUSH_S), and a call streams at most `cap`
characters, then says the rest is in the result.
"""

from __future__ import annotations

import asyncio
import codecs
import contextvars
from typing import TYPE_CHECKING

from ndomo.runtime.events import ToolOutput

if TYPE_CHECKING:
    from ndomo.runtime.context import TurnContext

STREAM_CAP = 64_000  # characters streamed per call
FLUSH_S = 0.05

# The id and name of the tool call running in this task (set by the executor around each call).
current_call: contextvars.ContextVar[tuple[str, str] | None] = contextvars.ContextVar(
    "ndomo_call", default=None
)


class OutputStream:
    def __init__(self, ctx: TurnContext, call_id: str, name: str, cap: int | None = None) -> None:
        self.ctx, self.call_id, self.name = ctx, call_id, name
        self.cap = STREAM_CAP if cap is None else cap
        self.sent = 0
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._buf: list[str] = []
        self._flusher: asyncio.Task | None = None
        self._capped = False

    async def feed(self, data: bytes | str) -> None:
        if self._capped:
            return
        text = self._decoder.decode(data) if isinstance(data, bytes) else data
        if not text:
            return
        room = self.cap - self.sent - sum(len(t) for t in self._buf)
        if len(text) >= room:
            self._buf.append(text[: max(room, 0)])
            self._buf.append("\n[… more output; the tool's result has the rest]\n")
            self._capped = True
            await self.flush()
            return
        self._buf.append(text)
        if self._flusher is None:
            self._flusher = asyncio.ensure_future(self._later())

    async def _later(self) -> None:
        await asyncio.sleep(FLUSH_S)
        self._flusher = None
        await self.flush()

    async def flush(self) -> None:
        if not self._buf:
            return
        text, self._buf = "".join(self._buf), []
        self.sent += len(text)
        await self.ctx.runtime.emit(
            self.ctx, ToolOutput(call_id=self.call_id, name=self.name, text=text)
        )

    async def close(self) -> None:
        """Send what is buffered (before the call's `tool_finished`)."""
        if self._flusher is not None:
            self._flusher.cancel()
            self._flusher = None
        if not self._capped:
            tail = self._decoder.decode(b"", final=True)
            if tail:
                self._buf.append(tail)
        await self.flush()


def output_stream(ctx: TurnContext) -> OutputStream | None:
    """The stream for the tool call running now, or None outside a call (a reflex, a test)."""
    call = current_call.get()
    return OutputStream(ctx, *call) if call else None
