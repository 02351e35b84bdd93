"""One file's changes as hunks, and the file a rejection of some of them leaves.

A hunk is one of difflib's non-equal opcodes between the checkpoint's text and the text on
disk (no context merged in): rejecting it puts its old lines back and leaves every other
change as it is. A file that is not UTF-8 text (or holds a NUL) is one whole-file hunk, as
are a created and a deleted file.
"""

from __future__ import annotations

import difflib
import hashlib
from dataclasses import dataclass
from typing import Literal

ABSENT = "absent"  # the hash of a file that does not exist

Status = Literal["modified", "created", "deleted", "binary"]


def content_hash(data: bytes | None) -> str:
    return ABSENT if data is None else "sha256:" + hashlib.sha256(data).hexdigest()


def split_lines(text: str) -> list[str]:
    """The lines of `text`, each with its "\\n" (the last one without when the text has
    none at its end): joined, they are `text` again."""
    parts = text.split("\n")
    lines = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _text(data: bytes | None) -> list[str] | None:
    if data is None:
        return []
    if b"\0" in data:
        return None
    try:
        return split_lines(data.decode("utf-8"))
    except UnicodeDecodeError:
        return None


@dataclass(frozen=True)
class Change:
    """One hunk: lines old[i1:i2] became new[j1:j2] (0-based, end exclusive)."""

    index: int  # 1-based, in the file's order
    i1: int
    i2: int
    j1: int
    j2: int
    removed: list[str]
    added: list[str]


@dataclass(frozen=True)
class FileDiff:
    status: Status
    changes: list[Change]
    old_lines: list[str] | None  # None: not text
    new_lines: list[str] | None
    new_hash: str  # content_hash(new): what an apply checks the file against


def diff(old: bytes | None, new: bytes | None) -> FileDiff:
    """The hunks turning `old` (None: no file) into `new` (None: deleted)."""
    status: Status = "created" if old is None else "deleted" if new is None else "modified"
    digest = content_hash(new)
    a, b = _text(old), _text(new)
    if a is None or b is None:
        whole = Change(1, 0, 0, 0, 0, [], [])
        return FileDiff("binary" if status == "modified" else status, [whole], None, None, digest)
    if status != "modified":  # one hunk: the whole file (even an empty one)
        return FileDiff(status, [Change(1, 0, len(a), 0, len(b), _bare(a), _bare(b))], a, b, digest)
    ops = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    changes = [
        Change(n, i1, i2, j1, j2, _bare(a[i1:i2]), _bare(b[j1:j2]))
        for n, (_, i1, i2, j1, j2) in enumerate((op for op in ops if op[0] != "equal"), 1)
    ]
    return FileDiff(status, changes, a, b, digest)


def _bare(lines: list[str]) -> list[str]:
    """The lines as shown: without their line ending (\n or \r\n)."""
    return [line.removesuffix("\n").removesuffix("\r") for line in lines]


def revert(fd: FileDiff, old: bytes | None, new: bytes | None, rejected: set[int]) -> bytes | None:
    """The file once the `rejected` hunks (by index) are put back; None: no file."""
    if not rejected:
        return new
    if fd.status != "modified":  # a whole-file hunk: back to what the checkpoint held
        return old
    assert fd.old_lines is not None and fd.new_lines is not None
    out: list[str] = []
    j = 0
    for c in fd.changes:
        out += fd.new_lines[j : c.j1]  # the equal run before it
        out += fd.old_lines[c.i1 : c.i2] if c.index in rejected else fd.new_lines[c.j1 : c.j2]
        j = c.j2
    out += fd.new_lines[j:]
    return "".join(out).encode("utf-8")
