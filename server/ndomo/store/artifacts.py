"""Large task results: the full text goes to a file, the database keeps the head and a pointer."""

from __future__ import annotations

import asyncio
from pathlib import Path

ARTIFACT_DIR = Path(".ndomo") / "artifacts"
RESULT_LIMIT = 16 * 1024  # bytes of UTF-8 kept in the database


def needs_spill(text: str | None, limit: int = RESULT_LIMIT) -> bool:
    return text is not None and len(text.encode("utf-8")) > limit


def head(text: str, limit: int) -> str:
    return text.encode("utf-8")[:limit].decode("utf-8", "ignore")


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


async def spill(
    workspace: Path, task_id: int, text: str, limit: int = RESULT_LIMIT
) -> tuple[str, str]:
    """Write the full text; return (stored text, workspace-relative artifact path)."""
    rel = ARTIFACT_DIR / f"{task_id}.txt"
    await asyncio.to_thread(_write, workspace / rel, text)
    size = len(text.encode("utf-8"))
    note = f"\n… [truncated: {size} bytes in total; the full result is in {rel.as_posix()}]"
    return head(text, max(0, limit - len(note.encode("utf-8")))) + note, rel.as_posix()
