"""The one table of file extensions: which stack (and so which smith) a file belongs to,
which tree-sitter grammar reads it, and which extensions name a file when a prompt or a
plan mentions one (`a.py`, `src/b.ts`, `notes.md`).

Read by agents/routing.py (stack → smith), agents/scope.py (files a prompt names),
plan/markdown.py (files a plan step names) and lib/code/languages.py (grammars).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FileType:
    stack: str | None = None  # the routing stack (agents/routing.py: stack → smith)
    grammar: str | None = None  # the tree-sitter language (lib/code/languages.py)


_TEXT = FileType()

TABLE: dict[str, FileType] = {
    ".go": FileType("go", "go"),
    ".vue": FileType("vue"),
    ".svelte": FileType("vue"),
    ".ts": FileType("js", "typescript"),
    ".tsx": FileType("js", "tsx"),
    ".js": FileType("js", "javascript"),
    ".jsx": FileType("js", "javascript"),
    ".mjs": FileType("js", "javascript"),
    ".cjs": FileType("js", "javascript"),
    ".mts": FileType("js", "typescript"),
    ".cts": FileType("js", "typescript"),
    ".py": FileType("python", "python"),
    ".pyi": FileType("python", "python"),
    ".rs": FileType("rust", "rust"),
    ".zig": FileType("zig"),
    **dict.fromkeys(
        [
            ".md",
            ".txt",
            ".rst",
            ".json",
            ".yaml",
            ".yml",
            ".toml",
            ".ini",
            ".cfg",
            ".html",
            ".htm",
            ".css",
            ".scss",
            ".sass",
            ".less",
            ".sh",
            ".bash",
            ".c",
            ".h",
            ".cc",
            ".cpp",
            ".hpp",
            ".java",
            ".kt",
            ".kts",
            ".rb",
            ".php",
            ".sql",
            ".lua",
            ".swift",
            ".cs",
            ".ex",
            ".exs",
            ".erl",
            ".hs",
            ".ml",
            ".scala",
            ".dart",
            ".r",
            ".jl",
            ".proto",
            ".graphql",
            ".xml",
            ".svg",
            ".env",
            ".lock",
        ],
        _TEXT,
    ),
}

# extension (lower case) → routing stack
STACKS: dict[str, str] = {ext: t.stack for ext, t in TABLE.items() if t.stack}
# extension (lower case) → tree-sitter language
GRAMMARS: dict[str, str] = {ext: t.grammar for ext, t in TABLE.items() if t.grammar}
# every extension that makes a word in prose a file name
KNOWN: frozenset[str] = frozenset(TABLE)
