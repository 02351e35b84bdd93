"""Language detection and cached tree-sitter parsers (per-language wheels, no downloads).

``Language`` objects are shared; ``Parser`` objects are not thread-safe, so each
thread (``asyncio.to_thread`` workers) gets its own, created once per language.
"""

from __future__ import annotations

import functools
import importlib
import threading
from pathlib import PurePosixPath

from ndomo.filetypes import GRAMMARS

EXTENSIONS: dict[str, str] = GRAMMARS  # the one table: ndomo/filetypes.py

# language -> (module, factory function, pip requirement to suggest)
_GRAMMARS: dict[str, tuple[str, str, str]] = {
    "python": ("tree_sitter_python", "language", "tree-sitter-python"),
    "javascript": ("tree_sitter_javascript", "language", "tree-sitter-javascript"),
    "typescript": ("tree_sitter_typescript", "language_typescript", "tree-sitter-typescript"),
    "tsx": ("tree_sitter_typescript", "language_tsx", "tree-sitter-typescript"),
    "go": ("tree_sitter_go", "language", "tree-sitter-go"),
    "rust": ("tree_sitter_rust", "language", "tree-sitter-rust"),
}

_local = threading.local()


def language_for(path: str) -> str | None:
    """Tree-sitter language for a file name, or None when only text patterns apply."""
    return EXTENSIONS.get(PurePosixPath(path).suffix.lower())


@functools.cache
def _load(lang: str):
    """``(Language, None)`` or ``(None, reason)``; import failures are cached too."""
    module_name, factory, requirement = _GRAMMARS[lang]
    try:
        import tree_sitter

        module = importlib.import_module(module_name)
        return tree_sitter.Language(getattr(module, factory)()), None
    except Exception as exc:  # noqa: BLE001 - a grammar wheel fails in many ways (missing, ABI mismatch, …): reported, not fatal
        return None, f"{requirement} unavailable ({type(exc).__name__}: {exc})"


def unavailable_reason(lang: str) -> str | None:
    return _load(lang)[1]


def parser_for(lang: str):
    """This thread's parser for ``lang``, or None when the grammar cannot load."""
    language, _ = _load(lang)
    if language is None:
        return None
    cache = getattr(_local, "parsers", None)
    if cache is None:
        cache = _local.parsers = {}
    parser = cache.get(lang)
    if parser is None:
        import tree_sitter

        parser = cache[lang] = tree_sitter.Parser(language)
    return parser


def parse(lang: str, source: bytes):
    """Parse tree or None when the grammar is unavailable."""
    parser = parser_for(lang)
    return None if parser is None else parser.parse(source)
