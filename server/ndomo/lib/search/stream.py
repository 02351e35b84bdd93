"""Bounded-memory search of one large file, and the preview of a long matching line.

Files over ``MAX_FILE_BYTES`` (a minified bundle, a log) are read ``CHUNK_BYTES`` at a
time: memory stays a few MB whatever the file or line length. A line longer than
``WINDOW_CHARS`` is searched in windows that overlap by ``OVERLAP_CHARS``, so a match
longer than the overlap that straddles a window edge can be missed: the price of a
bound. One match is reported per line, as rg does.
"""

from __future__ import annotations

import codecs
import os
import re
import stat
import time
from pathlib import Path

MAX_LINE_CHARS = 400
CHUNK_BYTES = 1 << 20
WINDOW_CHARS = 1 << 20
OVERLAP_CHARS = 4096
# Characters kept before the match in a cut line's preview.
LEAD_CHARS = 80


def preview(line: str, start: int = 0, total: int | None = None, offset: int = 0) -> str:
    """``line`` cut to ``MAX_LINE_CHARS`` around ``start``, the cut said in the text.

    ``line`` may be a piece of a longer line: it starts at ``offset`` in it, and
    ``total`` is the whole line's length.
    """
    line = line.rstrip("\r\n")
    total = len(line) if total is None else total
    if total <= MAX_LINE_CHARS and not offset:
        return line
    lo = max(0, min(start - LEAD_CHARS, len(line) - MAX_LINE_CHARS))
    body = line[lo : lo + MAX_LINE_CHARS]
    return ("…" if offset + lo else "") + body + f"… (line cut: {total:,} characters)"


def _snip(text: str, start: int, offset: int) -> tuple[str, int, int]:
    """The part of ``text`` a preview of a match at ``start`` can show."""
    lo = max(0, start - LEAD_CHARS)
    return text[lo : lo + 2 * MAX_LINE_CHARS], start - lo, offset + lo


def multiline(rx: re.Pattern[str]) -> re.Pattern[str]:
    """``rx`` with ``^``/``$`` at every line, to search a block of lines at once."""
    return re.compile(rx.pattern, rx.flags | re.MULTILINE)


class _Line:
    """The line being read: where the kept text starts in it and its pending match."""

    def __init__(self) -> None:
        self.offset = 0  # position in the line of the kept text's first character
        # The first match: (text around it, its start there, where that text starts in the line).
        self.hit: tuple[str, int, int] | None = None


def search_large(
    path: Path, rx: re.Pattern[str], limit: int, deadline: float
) -> tuple[list[tuple[int, str]], bool]:
    """``(line number, preview)`` of lines matching ``rx`` and whether the search stopped early.

    ``rx`` must be compiled with ``re.MULTILINE`` (see ``multiline``). A file with a NUL
    in its first chunk is binary and skipped, like the in-memory search does. Only
    regular files are read (a FIFO would block).
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return [], False
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return [], False
        return _scan(f, rx, limit, deadline)


def _scan(
    f, rx: re.Pattern[str], limit: int, deadline: float
) -> tuple[list[tuple[int, str]], bool]:
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    found: list[tuple[int, str]] = []
    line_no = 1
    cur = _Line()
    kept = ""
    first = True
    while True:
        if time.monotonic() > deadline:
            return found, True
        raw = f.read(CHUNK_BYTES)
        if first and b"\0" in raw:
            return [], False
        first = False
        data = kept + decoder.decode(raw, final=not raw)
        if not raw:
            if data:
                data += "\n"  # the last line has no terminator
            elif cur.hit is None:
                return found, False
        cut = data.rfind("\n")
        if cut >= 0:
            # The first line of the block continues the kept text; the rest start fresh.
            first_end = data.find("\n")
            head = data[:first_end].rstrip("\r")
            if cur.hit is None:
                m = rx.search(head, 1 if cur.offset else 0)
                if m:
                    cur.hit = (
                        _snip(head, m.start(), cur.offset) if cur.offset else (head, m.start(), 0)
                    )
            if cur.hit is not None:
                text, start, offset = cur.hit
                found.append((line_no, preview(text, start, cur.offset + len(head), offset)))
                if len(found) > limit:
                    return found[:limit], True
            line_no += 1
            block = data[first_end + 1 : cut + 1].replace("\r\n", "\n")
            pos = 0
            while pos < len(block):
                m = rx.search(block, pos)
                if not m:
                    break
                start = block.rfind("\n", 0, m.start()) + 1
                end = block.find("\n", m.start())
                end = len(block) if end < 0 else end
                line_no_hit = line_no + block.count("\n", 0, start)
                found.append((line_no_hit, preview(block[start:end], m.start() - start)))
                if len(found) > limit:
                    return found[:limit], True
                pos = end + 1
            line_no += block.count("\n")
            cur = _Line()
            kept = data[cut + 1 :]
        else:
            kept = data
        if not raw:
            return found, False
        if len(kept) > WINDOW_CHARS:
            # A long line: search what is read so far, keep only the overlap.
            if cur.hit is None:
                m = rx.search(kept, 1 if cur.offset else 0)
                # A match touching the window's end may go on (or be a `$`): the next
                # window, which starts OVERLAP_CHARS earlier, sees it whole.
                if m and m.end() < len(kept):
                    cur.hit = _snip(kept, m.start(), cur.offset)
            drop = len(kept) - OVERLAP_CHARS
            cur.offset += drop
            kept = kept[drop:]
