"""The language server's stdout: what one step of the event loop sends goes out in one
write, right after the step.

A write to the editor's pipe wakes the editor's reader, and Linux runs it on the writing
core at once (a pipe's wake-up is synchronous): the write returns only once the editor has
taken the message, ~0.6-0.8 ms on a 2-core VM for each message written while a turn sets
up, and four at a turn's end (its last event, the progress's end, the status, the result).
Gathered, the messages of a step cost one wake-up, after the step: a turn's end sends its
last event, its progress's end and its status in one write. An answer's text does not wait
for the step's end (`LspHost` calls `flush()`): that step may go on reading the next chunks.

Messages keep their order. A write from another thread (pygls may answer from its thread
pool) goes out at once, after what the loop had gathered. What is still gathered when the
loop stops is written by `flush()` (`serve_stdio` calls it before the process exits).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import BinaryIO

log = logging.getLogger("ndomo.lsp")


class BatchedStdout:
    """pygls's writer (`protocol.set_writer`) for stdio."""

    def __init__(self, stdout: BinaryIO, loop: asyncio.AbstractEventLoop) -> None:
        self._out = stdout
        self._loop = loop
        self._thread = threading.get_ident()  # the loop's: `serve_stdio` builds it there
        self._lock = threading.Lock()  # a message is never cut by another thread's
        self._pending: list[bytes] = []
        self._scheduled = False
        self._broken = False

    def write(self, data: bytes) -> None:
        if threading.get_ident() != self._thread or not self._loop.is_running():
            with self._lock:
                self._pending.append(data)
                lost = self._write_pending()
            self._tell(lost)
            return
        with self._lock:
            self._pending.append(data)
        if not self._scheduled:
            self._scheduled = True
            self._loop.call_soon(self.flush)

    def flush(self) -> None:
        """Write what was gathered, now."""
        self._scheduled = False
        with self._lock:
            lost = self._write_pending()
        self._tell(lost)

    def close(self) -> None:
        self.flush()
        self._out.close()

    def _write_pending(self) -> int:
        """Write and clear what was gathered (under the lock); the bytes a closed pipe lost."""
        if not self._pending:
            return 0
        data = b"".join(self._pending)
        self._pending.clear()
        if self._broken:
            return 0
        try:
            self._out.write(data)
            self._out.flush()
        except (BrokenPipeError, ValueError):  # the editor went away (or closed our stdout)
            self._broken = True
            return len(data)
        return 0

    def _tell(self, lost: int) -> None:
        # outside the lock: the log line itself is written here (ndomo.lsp.logs), dropped
        if lost:
            log.warning("the editor closed the connection: %d bytes not sent", lost)
