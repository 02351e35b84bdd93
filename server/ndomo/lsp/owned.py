"""Files the server owns that an editor may have open: plan views, session transcripts.

Written straight to disk, an open buffer of such a file goes stale, and saving the stale
buffer writes old text back. So while a file is open its buffer is changed instead —
a minimal, versioned `workspace/applyEdit` — and then saved: by the editor when it
offers `ndomo/saveDocuments`, else by writing the same text to disk. Closed files are
simply written.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

from pygls.uris import from_fs_path

from ndomo.runtime.host import write_atomic

if TYPE_CHECKING:
    from ndomo.lsp.server import NdomoServer


def _disk(path: Path) -> str | None:
    try:
        with path.open(encoding="utf-8", newline="") as fh:
            return fh.read()
    except (FileNotFoundError, UnicodeDecodeError):
        return None


async def write_owned(server: NdomoServer, path: Path, text: str) -> bool:
    """Make `path` read `text` in the editor (if open) and on disk; False when an open
    buffer refused the change (it keeps what it had, the disk is left alone)."""
    doc = server.workspace.text_documents.get(from_fs_path(str(path)))
    if doc is None:
        if await asyncio.to_thread(_disk, path) != text:
            await asyncio.to_thread(write_atomic, path, text)
        return True
    if doc.source != text:
        host = server.new_host(server.app_for(path))
        outcome = await host.apply_edit(path, text, doc.source)
        if not outcome.applied:
            return False
        await host.save_edited([path])
    elif await asyncio.to_thread(_disk, path) != text:
        await asyncio.to_thread(write_atomic, path, text)
    return True


async def append_owned(server: NdomoServer, path: Path, text: str) -> None:
    """Append to an owned file (a transcript) without losing what the buffer or disk held."""
    doc = server.workspace.text_documents.get(from_fs_path(str(path)))
    if doc is None or not await write_owned(server, path, doc.source + text):

        def append() -> None:
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("a", encoding="utf-8") as fh:
                fh.write(text)

        await asyncio.to_thread(append)
