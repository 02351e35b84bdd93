"""Workspace-wide symbol lookup: definitions by name and identifier references."""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args

from ndomo.lib.code.filemap import FileMap, file_map
from ndomo.lib.code.languages import language_for, parse
from ndomo.lib.code.models import Symbol, SymbolKind
from ndomo.lib.code.outline import extract, outline
from ndomo.lib.code.source import is_outlinable, read_source
from ndomo.lib.code.textoutline import text_outline
from ndomo.lib.search.grep import Match, clip_line
from ndomo.lib.search.walk import walk
from ndomo.schema import Schema

__all__ = [
    "FileMap",
    "Reference",
    "SymbolHit",
    "file_map",
    "find_references",
    "find_symbol",
    "render_hits",
    "render_references",
]

_KINDS = frozenset(get_args(SymbolKind))


class SymbolHit(Schema):
    path: str
    symbol: Symbol

    def render(self) -> str:
        s = self.symbol
        span = f"L{s.line}" if s.end_line == s.line else f"L{s.line}-{s.end_line}"
        return f"{self.path}:{s.line}: {s.kind} {s.qualname} ({span})"


class Reference(Match):
    column: int  # 1-based, first occurrence on the line
    is_definition: bool = False

    def render(self) -> str:
        mark = " [definition]" if self.is_definition else ""
        return f"{self.path}:{self.line}:{self.column}{mark}: {self.text}"


def _split(name: str) -> tuple[str | None, str]:
    name = name.strip()
    if not name:
        raise ValueError("empty symbol name")
    parent, _, leaf = name.rpartition(".")
    return (parent or None), leaf


def _matches(sym: Symbol, name: str, parent: str | None, leaf: str) -> bool:
    if sym.name == name:
        return True
    if parent is None or sym.name != leaf or sym.parent is None:
        return False
    return sym.parent == parent or sym.parent.endswith("." + parent)


def find_symbol(
    root: Path | str,
    name: str,
    *,
    kind: str | None = None,
    limit: int = 50,
    path: str | None = None,
) -> list[SymbolHit]:
    """Definitions named ``name``; ``Class.method`` matches parent + name."""
    if kind is not None and kind not in _KINDS:
        raise ValueError(f"unknown symbol kind {kind!r}; expected one of {sorted(_KINDS)}")
    parent, leaf = _split(name)
    hits: list[SymbolHit] = []
    for rel, abs_path in walk(Path(root), under=path):
        if not is_outlinable(rel):
            continue
        text = read_source(abs_path)
        if text is None or leaf not in text:
            continue
        for sym in outline(rel, text).symbols:
            if (kind is None or sym.kind == kind) and _matches(sym, name, parent, leaf):
                hits.append(SymbolHit(path=rel, symbol=sym))
                if len(hits) >= limit:
                    return hits
    return hits


_IDENT_TYPES_SUFFIX = "identifier"


def _tree_refs(lang: str, source: bytes, leaf: str):
    """(row, col) of identifier nodes equal to ``leaf`` and the definition positions."""
    tree = parse(lang, source)
    if tree is None:
        return None
    _, defs = extract(lang, tree)
    leaf_b = leaf.encode()
    found: list[tuple[int, int, bool]] = []
    for m in re.finditer(re.escape(leaf_b), source):
        node = tree.root_node.descendant_for_byte_range(m.start(), m.end())
        if node is None or not node.type.endswith(_IDENT_TYPES_SUFFIX) or node.text != leaf_b:
            continue
        row, col = node.start_point.row, node.start_point.column
        found.append((row, col, (row, col) in defs))
    return found


def _text_refs(rel: str, text: str, leaf: str, word: re.Pattern[str]):
    def_lines = {s.line for s in text_outline(rel, text) if s.name == leaf}
    found: list[tuple[int, int, bool]] = []
    for row, line in enumerate(text.split("\n")):
        for m in word.finditer(line):
            found.append((row, len(line[: m.start()].encode()), row + 1 in def_lines))
    return found


def find_references(
    root: Path | str,
    name: str,
    limit: int = 200,
    *,
    path: str | None = None,
) -> list[Reference]:
    """Lines where identifier ``name`` occurs (last segment of a dotted name).

    Supported languages use tree-sitter identifier nodes, so strings and comments
    do not count; other text files use a word-boundary regex. ``is_definition``
    marks the lines that define it.
    """
    _, leaf = _split(name)
    word = re.compile(r"(?<![\w$])" + re.escape(leaf) + r"(?![\w$])")
    refs: list[Reference] = []
    for rel, abs_path in walk(Path(root), under=path):
        text = read_source(abs_path)
        if text is None or leaf not in text:
            continue
        lang = language_for(rel)
        found = None
        if lang is not None:
            found = _tree_refs(lang, text.encode("utf-8", errors="replace"), leaf)
        if found is None:
            found = _text_refs(rel, text, leaf, word)
        if not found:
            continue
        lines = text.split("\n")
        by_row: dict[int, Reference] = {}
        for row, col_bytes, is_def in found:
            ref = by_row.get(row)
            if ref is None:
                line = lines[row] if row < len(lines) else ""
                col = len(line.encode()[:col_bytes].decode("utf-8", errors="replace")) + 1
                by_row[row] = Reference(
                    path=rel, line=row + 1, text=clip_line(line), column=col, is_definition=is_def
                )
            elif is_def:
                ref.is_definition = True
        for row in sorted(by_row):
            refs.append(by_row[row])
            if len(refs) >= limit:
                return refs
    return refs


def render_hits(hits: list[SymbolHit], limit: int | None = None) -> str:
    if not hits:
        return "no definitions found"
    out = [h.render() for h in hits]
    if limit is not None and len(hits) >= limit:
        out.append(f"… (stopped at {limit}; add kind or a Parent.name)")
    return "\n".join(out)


def render_references(refs: list[Reference], limit: int | None = None) -> str:
    if not refs:
        return "no references found"
    out = [r.render() for r in refs]
    if limit is not None and len(refs) >= limit:
        out.append(f"… (stopped at {limit}; narrow with path)")
    return "\n".join(out)
