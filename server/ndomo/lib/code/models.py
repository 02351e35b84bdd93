"""Result models of the code tools; each renders compact text for the model."""

from __future__ import annotations

from typing import Literal

from ndomo.schema import Schema

SymbolKind = Literal[
    "function",
    "class",
    "method",
    "struct",
    "interface",
    "enum",
    "const",
    "variable",
    "module",
    "heading",
    "type",
]
OutlineEngine = Literal["tree-sitter", "text"]


class Symbol(Schema):
    name: str
    kind: SymbolKind
    line: int  # 1-based
    end_line: int
    parent: str | None = None  # dotted qualified name of the enclosing symbol

    @property
    def qualname(self) -> str:
        return f"{self.parent}.{self.name}" if self.parent else self.name

    def render(self, *, qualified: bool = False) -> str:
        span = f"L{self.line}" if self.end_line == self.line else f"L{self.line}-{self.end_line}"
        return f"{self.kind} {self.qualname if qualified else self.name} {span}"


class Outline(Schema):
    path: str
    engine: OutlineEngine
    symbols: list[Symbol]
    note: str | None = None  # e.g. why tree-sitter was not used

    def render(self) -> str:
        head = f"{self.path} ({self.engine}, {len(self.symbols)} symbols)"
        if self.note:
            head += f" [{self.note}]"
        lines = [head]
        open_: list[tuple[str, int]] = []  # (qualname, end_line) of enclosing symbols
        for sym in self.symbols:
            while open_ and open_[-1][1] < sym.line:
                open_.pop()
            names = [q for q, _ in open_]
            if sym.parent is not None and sym.parent in names:
                del open_[names.index(sym.parent) + 1 :]
                level, text = len(open_) + 1, sym.render()
            else:
                # Parent defined elsewhere (Go receiver, Rust impl): name it explicitly.
                open_.clear()
                level, text = 1, sym.render(qualified=sym.parent is not None)
            lines.append("  " * level + text)
            open_.append((sym.qualname, sym.end_line))
        return "\n".join(lines)
