"""Minimal `TextEdit`s from an old and a new text: only the lines that changed are sent.

A whole-file replacement makes editors drop marks, signs and cursor positions and record
one undo step per line; a diff keeps everything outside the changed lines where it was.
Lines are split on the LSP terminators only (`\\r\\n`, `\\n`, `\\r`) — `str.splitlines`
also splits on form feeds and U+2028, which would number lines differently from the editor.
"""

from __future__ import annotations

import difflib
import re

from lsprotocol import types

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def split_lines(text: str) -> list[str]:
    """The text's lines, each with its terminator (the last may have none)."""
    return _LINE.findall(text)


def _units(s: str, encoding: str) -> int:
    """Length of `s` in the negotiated position encoding's code units."""
    if encoding == types.PositionEncodingKind.Utf8:
        return len(s.encode("utf-8"))
    if encoding == types.PositionEncodingKind.Utf32:
        return len(s)
    return len(s.encode("utf-16-le")) // 2


def _position(lines: list[str], index: int, encoding: str) -> types.Position:
    """Start of line `index`; one past the last line is the end of the document."""
    if index < len(lines) or not lines or lines[-1][-1:] in ("\n", "\r"):
        return types.Position(line=index, character=0)
    last = lines[-1]
    return types.Position(line=len(lines) - 1, character=_units(last, encoding))


def text_edits(
    old: str, new: str, encoding: str = types.PositionEncodingKind.Utf16
) -> list[types.TextEdit]:
    """Edits that turn `old` into `new`, one per changed run of lines, in document order."""
    a, b = split_lines(old), split_lines(new)
    edits = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            continue
        edits.append(
            types.TextEdit(
                range=types.Range(start=_position(a, i1, encoding), end=_position(a, i2, encoding)),
                new_text="".join(b[j1:j2]),
            )
        )
    return edits
