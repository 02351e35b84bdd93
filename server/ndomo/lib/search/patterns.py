"""User-supplied glob patterns (gitwildmatch style) shared by glob and grep.

Both grep engines filter with this one matcher so their results agree.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pathspec

_MAX_EXPANSIONS = 64
_BRACE = re.compile(r"\{([^{}]*,[^{}]*)\}")
_GLOB_CHARS = set("*?[]{}!\\")


class PatternError(ValueError):
    """A glob or path argument the model gave cannot be used."""


def expand_braces(pattern: str) -> list[str]:
    """Expand ``{a,b}`` alternatives, which gitwildmatch lacks but models write often."""
    out: list[str] = []
    todo = [pattern]
    while todo:
        cur = todo.pop()
        m = _BRACE.search(cur)
        if m is None:
            out.append(cur)
            continue
        for alt in m.group(1).split(","):
            todo.append(cur[: m.start()] + alt + cur[m.end() :])
        if len(out) + len(todo) > _MAX_EXPANSIONS:
            raise PatternError(f"glob {pattern!r} expands to too many alternatives")
    return sorted(set(out))


def compile_glob(pattern: str) -> pathspec.PathSpec:
    """Compile one model glob; ``*.py`` matches at any depth, ``src/*.ts`` is anchored."""
    pattern = pattern.strip()
    if not pattern:
        raise PatternError("empty glob pattern")
    if pattern.startswith("!"):
        raise PatternError(f"glob {pattern!r}: negated patterns are not supported")
    parts = expand_braces(pattern)
    for part in parts:
        if ".." in part.split("/"):
            raise PatternError(f"glob {pattern!r} must not contain '..'")
    import pathspec  # on the first glob, not at every process's start (~10 ms)

    try:
        return pathspec.GitIgnoreSpec.from_lines(parts)
    except Exception as exc:  # noqa: BLE001 - pathspec raises several types for malformed globs
        raise PatternError(f"invalid glob {pattern!r}: {exc}") from exc


def mentions_hidden(pattern: str) -> bool:
    """True when a segment names a dot-entry, so the caller evidently wants hidden files."""
    return any(seg.startswith(".") and seg not in (".", "..") for seg in pattern.split("/"))


def literal_prefix(pattern: str) -> str | None:
    """Leading folder of an anchored glob (``src/x/*.ts`` -> ``src/x``) to prune the walk."""
    pat = pattern.strip().lstrip("/")
    anchored = "/" in pattern.strip().rstrip("/")
    if not anchored:
        return None
    segs = pat.split("/")[:-1]
    lit: list[str] = []
    for seg in segs:
        if not seg or any(c in _GLOB_CHARS for c in seg):
            break
        lit.append(seg)
    return "/".join(lit) or None
