"""Small text helpers: slugs, FTS5 queries, memory normalisation."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

_WORD = re.compile(r"\w+", re.UNICODE)


def slugify(text: str, max_len: int = 60) -> str:
    """Kebab-case ASCII slug; 'plan' when nothing usable is left."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")
    if len(slug) > max_len:
        slug = slug[:max_len].rstrip("-")
        if "-" in slug[max_len // 2 :]:
            slug = slug.rsplit("-", 1)[0]
    return slug or "plan"


def with_suffix(slug: str, n: int, max_len: int = 60) -> str:
    tail = f"-{n}"
    return slug[: max_len - len(tail)].rstrip("-") + tail


def fts_query(text: str, terms: Callable[[str], list[str] | None] | None = None) -> str | None:
    """Turn free text into a safe FTS5 query: every word must appear (as a prefix).

    Users type quotes, dashes and colons that FTS5 would read as syntax, so words are
    quoted one by one; None when the text has no words at all. `terms(word)`, when given,
    names the indexed terms a word is a prefix of (None: search it as a prefix): the word
    is searched as exactly those, and the text matches nothing (None) when there are none.
    """
    words = _WORD.findall(text)
    if not words:
        return None
    parts = []
    for w in words:
        found = terms(w) if terms else None
        if found is None:
            parts.append(_quote(w) + "*")
        elif not found:
            return None
        else:
            parts.append("(" + " OR ".join(_quote(t) for t in found) + ")")
    return " AND ".join(parts)


def _quote(word: str) -> str:
    return '"' + word.replace('"', '""') + '"'


_STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "for",
        "from",
        "had",
        "has",
        "have",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "no",
        "not",
        "of",
        "on",
        "or",
        "our",
        "should",
        "so",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
    ]
)


def fts_any(text: str) -> str | None:
    """Free text (a prompt) as an FTS5 query matching ANY of its meaningful words, so
    bm25 ranks notes by how much they share with it; None when nothing is left."""
    words = sorted(
        {w.casefold() for w in _WORD.findall(text) if len(w) > 2 and w.casefold() not in _STOP}
    )
    if not words:
        return None
    return " OR ".join('"' + w.replace('"', '""') + '"*' for w in words)


def normalise(text: str) -> str:
    """Comparable form of a memory: case, spacing and trailing punctuation ignored."""
    text = unicodedata.normalize("NFKC", text).casefold()
    text = re.sub(r"\s+", " ", text).strip()
    return text.rstrip(" .!;,")


def norm_description(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()
