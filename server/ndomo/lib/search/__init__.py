"""Workspace search primitives: ignore-aware file walking, glob and grep.

Pure synchronous library code; tool wrappers run it via ``asyncio.to_thread``.
"""

from ndomo.lib.search.glob import GlobResult, glob_files
from ndomo.lib.search.grep import GrepError, GrepResult, Match, grep
from ndomo.lib.search.patterns import PatternError
from ndomo.lib.search.walk import ALWAYS_SKIP, iter_files

__all__ = [
    "ALWAYS_SKIP",
    "GlobResult",
    "GrepError",
    "GrepResult",
    "Match",
    "PatternError",
    "glob_files",
    "grep",
    "iter_files",
]
