"""Logs to the editor's log (`window/logMessage`), not to stderr.

Editors record a server's stderr as errors (Neovim logs every line at ERROR), so
routine INFO lines there read as failures. This handler sends each record at or above
the chosen level as a `window/logMessage`; stderr keeps only warnings and errors.
Records logged before `initialized` wait in a small buffer; records from worker threads
are handed to the event loop's thread, which owns the connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections import deque
from typing import TYPE_CHECKING

from lsprotocol import types

from ndomo.lsp.process import life_of

if TYPE_CHECKING:
    from ndomo.lsp.server import NdomoServer

_TRANSPORT = ("pygls", "lsprotocol")
EARLY_RECORDS = 200  # kept until the client is ready; older ones are dropped

_TYPES = [
    (logging.ERROR, types.MessageType.Error),
    (logging.WARNING, types.MessageType.Warning),
    (logging.INFO, types.MessageType.Info),
]


def message_type(levelno: int) -> types.MessageType:
    for level, kind in _TYPES:
        if levelno >= level:
            return kind
    return types.MessageType.Log


class LogMessageHandler(logging.Handler):
    def __init__(self, server: NdomoServer, level: int = logging.INFO) -> None:
        super().__init__(level)
        self.server = server
        self.setFormatter(logging.Formatter("%(name)s: %(message)s"))
        self._early: deque[tuple[int, str]] = deque(maxlen=EARLY_RECORDS)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._sending = threading.local()

    def ready(self) -> None:
        """The client is initialized: send what waited, then everything as it comes."""
        self._loop = asyncio.get_running_loop()
        while self._early:
            self._send(*self._early.popleft())

    def emit(self, record: logging.LogRecord) -> None:
        if getattr(self._sending, "active", False):  # a log line from sending a log line
            return
        if record.levelno < logging.WARNING and record.name.startswith(_TRANSPORT):
            return  # pygls logs every message it sends (INFO "Sending data"): echoing would double the traffic
        try:
            text = self.format(record)
        except Exception:  # noqa: BLE001 - logging.Handler's contract: a bad record goes to handleError
            self.handleError(record)
            return
        loop = self._loop
        if loop is None:
            self._early.append((record.levelno, text))
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            self._send(record.levelno, text)
        elif not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(self._send, record.levelno, text)

    def _send(self, levelno: int, text: str) -> None:
        if life_of(self.server).exiting:
            return
        self._sending.active = True
        try:
            self.server.window_log_message(
                types.LogMessageParams(type=message_type(levelno), message=text)
            )
        except Exception:  # noqa: BLE001 - the connection is gone: nowhere left to log to (logging here would recurse)
            pass
        finally:
            self._sending.active = False
