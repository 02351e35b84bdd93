"""Find workspace files by gitwildmatch pattern (``**/*.py``, ``src/*.ts``)."""

from __future__ import annotations

from pathlib import Path

from ndomo.lib.search.patterns import (
    PatternError,
    compile_glob,
    literal_prefix,
    mentions_hidden,
)
from ndomo.lib.search.walk import path_excluded, walk
from ndomo.schema import Schema


class GlobResult(Schema):
    paths: list[str]
    truncated: bool = False

    def render(self) -> str:
        if not self.paths:
            return "no files match"
        lines = list(self.paths)
        if self.truncated:
            lines.append(f"… (truncated at {len(self.paths)} files; narrow the pattern)")
        return "\n".join(lines)


def glob_files(
    root: Path | str,
    pattern: str,
    limit: int = 500,
    *,
    include_hidden: bool | None = None,
) -> GlobResult:
    """Files matching ``pattern``, sorted, ignore rules applied.

    A pattern without ``/`` matches at any depth (gitignore semantics); ``{a,b}``
    alternatives are expanded. Hidden files are included when the pattern names one
    (``.github/**``) unless ``include_hidden`` says otherwise.
    """
    if limit < 1:
        raise PatternError("limit must be at least 1")
    spec = compile_glob(pattern)
    if include_hidden is None:
        include_hidden = mentions_hidden(pattern)
    root = Path(root).resolve()
    prefix = literal_prefix(pattern)
    under = None
    if prefix is not None:
        if not (root / prefix).is_dir() or path_excluded(
            root, prefix, include_hidden=include_hidden
        ):
            return GlobResult(paths=[])
        under = prefix
    try:
        found = [
            rel
            for rel, _ in walk(root, include_hidden=include_hidden, under=under)
            if spec.match_file(rel)
        ]
    except ValueError as exc:
        raise PatternError(str(exc)) from exc
    found.sort()
    return GlobResult(paths=found[:limit], truncated=len(found) > limit)
