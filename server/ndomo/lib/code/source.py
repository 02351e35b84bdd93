"""Reading workspace files for code analysis: text only, size-capped."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

MAX_SOURCE_BYTES = 1024 * 1024

# Data and markup files whose text would only feed the regex outline noise.
NON_CODE_EXT = frozenset(
    {
        ".txt",
        ".json",
        ".jsonl",
        ".yaml",
        ".yml",
        ".toml",
        ".lock",
        ".csv",
        ".tsv",
        ".xml",
        ".html",
        ".htm",
        ".css",
        ".scss",
        ".svg",
        ".ini",
        ".cfg",
        ".conf",
        ".log",
        ".env",
        ".map",
        ".min.js",
        ".snap",
        ".sql",
        ".pem",
        ".rst",
    }
)


def read_source(path: Path, max_bytes: int = MAX_SOURCE_BYTES) -> str | None:
    """File text, or None for binary, unreadable or oversized files."""
    try:
        if path.stat().st_size > max_bytes:
            return None
        data = path.read_bytes()
    except OSError:
        return None
    if b"\0" in data[:8192]:
        return None
    return data.decode("utf-8", errors="replace")


def is_outlinable(rel: str) -> bool:
    """Whether a symbol outline of this file means anything."""
    p = PurePosixPath(rel)
    return bool(p.suffix) and p.suffix.lower() not in NON_CODE_EXT
