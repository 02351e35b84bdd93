"""Regex outline for files without a tree-sitter grammar (and when a wheel is missing).

Good enough to navigate: def/class/function/func/fn/struct/enum/trait/interface,
markdown headings; parents come from indentation, ends from the next dedent.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from ndomo.lib.code.models import Symbol, SymbolKind

MARKDOWN_EXT = {".md", ".markdown", ".mdx"}
_ID = r"([A-Za-z_$][\w$]*)"
_VIS = r"(?:pub(?:\([^)]*\))?\s+)?"
_RULES: list[tuple[re.Pattern[str], SymbolKind]] = [
    (re.compile(r"^(\s*)func\s+\(\s*\w*\s*\*?\s*([A-Za-z_]\w*)[^)]*\)\s*" + _ID), "method"),
    (re.compile(r"^(\s*)(?:async\s+)?def\s+" + _ID), "function"),
    (
        re.compile(r"^(\s*)(?:export\s+)?(?:default\s+)?(?:async\s+)?function\s*\*?\s*" + _ID),
        "function",
    ),
    (re.compile(r"^(\s*)func\s+" + _ID), "function"),
    (
        re.compile(
            r"^(\s*)" + _VIS + r"(?:(?:async|const|unsafe|extern(?:\s+\"[^\"]*\")?)\s+)*fn\s+" + _ID
        ),
        "function",
    ),
    (re.compile(r"^(\s*)(?:export\s+)?(?:default\s+)?(?:abstract\s+)?class\s+" + _ID), "class"),
    (re.compile(r"^(\s*)type\s+" + _ID + r"\s+struct\b"), "struct"),
    (re.compile(r"^(\s*)type\s+" + _ID + r"\s+interface\b"), "interface"),
    (re.compile(r"^(\s*)" + _VIS + r"struct\s+" + _ID), "struct"),
    (re.compile(r"^(\s*)" + _VIS + r"(?:export\s+)?(?:const\s+)?enum\s+" + _ID), "enum"),
    (re.compile(r"^(\s*)" + _VIS + r"(?:unsafe\s+)?trait\s+" + _ID), "interface"),
    (re.compile(r"^(\s*)(?:export\s+)?interface\s+" + _ID), "interface"),
]
_CONTAINERS = {"class", "struct", "interface"}
_CLOSERS = ("}", "end", ")", "]")
_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _block_end(lines: list[str], idx: int, indent: int) -> int:
    """1-based last line of the block opened at ``idx`` (0-based), judged by indentation."""
    last = idx
    for j in range(idx + 1, len(lines)):
        line = lines[j]
        if not line.strip():
            continue
        if _indent(line) <= indent:
            return j + 1 if line.strip().startswith(_CLOSERS) else last + 1
        last = j
    return last + 1


def text_outline(path: str, text: str) -> list[Symbol]:
    lines = text.split("\n")
    if PurePosixPath(path).suffix.lower() in MARKDOWN_EXT:
        return _markdown(lines)
    symbols: list[Symbol] = []
    stack: list[tuple[int, str, SymbolKind]] = []  # (indent, qualname, kind) of open containers
    for idx, line in enumerate(lines):
        for rx, kind in _RULES:
            m = rx.match(line)
            if not m:
                continue
            indent = _indent(line)
            while stack and stack[-1][0] >= indent:
                stack.pop()
            if kind == "method":  # Go receiver: parent is the receiver type
                parent, name = m.group(2), m.group(3)
            else:
                name = m.group(2)
                parent = stack[-1][1] if stack else None
                if kind == "function" and stack and stack[-1][2] in _CONTAINERS:
                    kind = "method"
            sym = Symbol(
                name=name,
                kind=kind,
                line=idx + 1,
                end_line=_block_end(lines, idx, indent),
                parent=parent,
            )
            symbols.append(sym)
            stack.append((indent, sym.qualname, kind))
            break
    return symbols


def _markdown(lines: list[str]) -> list[Symbol]:
    found: list[tuple[int, int, str]] = []  # (0-based line, level, title)
    fenced = False
    for idx, line in enumerate(lines):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        m = _HEADING.match(line)
        if m:
            found.append((idx, len(m.group(1)), m.group(2)))
    last_line = len(lines)
    while last_line > 1 and not lines[last_line - 1].strip():
        last_line -= 1
    symbols: list[Symbol] = []
    open_: list[tuple[int, str]] = []  # (level, qualname)
    for i, (idx, level, title) in enumerate(found):
        end = last_line
        for jdx, jlevel, _ in found[i + 1 :]:
            if jlevel <= level:
                end = jdx  # the line before the next heading, 1-based
                break
        while open_ and open_[-1][0] >= level:
            open_.pop()
        parent = open_[-1][1] if open_ else None
        sym = Symbol(
            name=title, kind="heading", line=idx + 1, end_line=max(end, idx + 1), parent=parent
        )
        symbols.append(sym)
        open_.append((level, sym.qualname))
    return symbols
