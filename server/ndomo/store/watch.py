"""Tell when another process may have committed to the database, without polling.

The store has one change signal: the database files. Every commit appends to the `-wal`
file (or, after a checkpoint or in another journal mode, rewrites the database file), so
an inotify watch on their folder, read through the event loop (`loop.add_reader`), wakes
the caller only when one of them changes: an idle server gets no wake-ups at all.
Where inotify is unavailable (not Linux, the library missing, the watch limit reached) a
slow poll of the files' signature (`file_stamp`) stands in.

Own writes are announced directly by the store (`commit_listeners`); they also show up
here, and callers debounce.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Literal

log = logging.getLogger("ndomo.store")

FALLBACK_POLL_S = 5.0

Kind = Literal["inotify", "poll"]
# (size, mtime_ns, inode) of the db and its WAL; None for a missing file.
Stamp = tuple[tuple[int, int, int] | None, ...]


def file_stamp(db_path: Path) -> Stamp:
    """The database files' signature: it changes whenever anything is committed."""
    out: list[tuple[int, int, int] | None] = []
    for path in (db_path, db_path.with_name(db_path.name + "-wal")):
        try:
            st = os.stat(path)
        except OSError:
            out.append(None)
            continue
        out.append((st.st_size, st.st_mtime_ns, st.st_ino))
    return tuple(out)


class DbWatch:
    def __init__(
        self, db_path: Path, on_change: Callable[[], None], *, poll_s: float = FALLBACK_POLL_S
    ) -> None:
        self.db_path = Path(db_path)
        self.on_change = on_change
        self.poll_s = max(poll_s, FALLBACK_POLL_S)
        self.kind: Kind | None = None
        self._names = {self.db_path.name, self.db_path.name + "-wal"}
        self._inotify = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._stamp: Stamp | None = None

    def start(self, *, inotify: bool = True) -> Kind:
        """Start watching on the running loop; returns how ("inotify" or "poll")."""
        self._loop = asyncio.get_running_loop()
        if inotify and self._start_inotify():
            self.kind = "inotify"
        else:
            self._stamp = file_stamp(self.db_path)
            self._timer = self._loop.call_later(self.poll_s, self._poll)
            self.kind = "poll"
        return self.kind

    def close(self) -> None:
        if self._inotify is not None:
            assert self._loop is not None
            self._loop.remove_reader(self._inotify.fileno())
            self._inotify.close()
            self._inotify = None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    # -- inotify -----------------------------------------------------------------------------
    def _start_inotify(self) -> bool:
        try:
            from inotify_simple import INotify, flags
        except ImportError:
            return False
        try:
            ino = INotify(nonblocking=True)
        except (OSError, AttributeError):  # not Linux, or no inotify instances left
            return False
        mask = flags.MODIFY | flags.CREATE | flags.DELETE | flags.MOVED_TO | flags.CLOSE_WRITE
        try:
            ino.add_watch(str(self.db_path.parent), mask)
        except OSError as exc:  # e.g. the per-user watch limit
            log.info(
                "no inotify watch on %s (%s): polling every %.0f s",
                self.db_path.parent,
                exc,
                self.poll_s,
            )
            ino.close()
            return False
        self._inotify = ino
        assert self._loop is not None
        self._loop.add_reader(ino.fileno(), self._readable)
        return True

    def _readable(self) -> None:
        if self._inotify is None:
            return
        try:
            events = self._inotify.read(timeout=0)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            log.exception("reading inotify events failed")
            return
        if any(e.name in self._names for e in events):
            self.on_change()

    # -- fallback ---------------------------------------------------------------------------
    def _poll(self) -> None:
        assert self._loop is not None
        stamp = file_stamp(self.db_path)
        if stamp != self._stamp:
            self._stamp = stamp
            self.on_change()
        self._timer = self._loop.call_later(self.poll_s, self._poll)
