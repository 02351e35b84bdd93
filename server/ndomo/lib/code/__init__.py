"""Code-navigation primitives: tree-sitter outlines, symbol lookup, workspace map.

Pure synchronous library code; tool wrappers run it via ``asyncio.to_thread``.
"""

from ndomo.lib.code.filemap import FileMap, file_map
from ndomo.lib.code.models import Outline, Symbol, SymbolKind
from ndomo.lib.code.outline import outline
from ndomo.lib.code.symbols import (
    Reference,
    SymbolHit,
    find_references,
    find_symbol,
    render_hits,
    render_references,
)

__all__ = [
    "FileMap",
    "Outline",
    "Reference",
    "Symbol",
    "SymbolHit",
    "SymbolKind",
    "file_map",
    "find_references",
    "find_symbol",
    "outline",
    "render_hits",
    "render_references",
]
