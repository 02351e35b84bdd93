"""The Host: everything a turn needs from whoever drives it (an editor, a terminal, a test).

`BaseHost` works on disk with no user; `LspHost` (in ndomo.lsp) and `TerminalHost`
specialise it. File work runs off the event loop.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path
from typing import Literal, Protocol

from ndomo.runtime.events import TurnEvent
from ndomo.schema import Schema

ApprovalChoice = Literal["once", "session", "project", "deny"]


class ApprovalRequest(Schema):
    permission: str  # edit, write, bash, webfetch, question, task, plan_db, secret
    subject: str  # the command, path, url or agent the permission is about
    agent: str
    mode: str
    reason: str = ""  # why it is asked (e.g. which simple command did not match)
    network: bool | None = None  # a shell call: whether it gets network if allowed
    sandbox: str = ""  # a shell call: the OS sandbox it runs in ("sandboxed (bubblewrap)", …)

    def text(self) -> str:
        """The question shown to the user (editor and terminal alike)."""
        msg = f"ndomo · {self.agent} ({self.mode}) wants {self.permission}: {self.subject}"
        if self.reason:
            msg += f" — {self.reason}"
        if self.network is not None:
            net = "WITH network" if self.network else "without network"
            msg += f" · if allowed it runs {net}, {self.sandbox or 'sandbox unknown'}"
        return msg


class EditOutcome(Schema):
    applied: bool
    reason: str = ""


class Host(Protocol):
    async def emit(self, event: TurnEvent) -> None: ...
    async def read_text(self, path: Path) -> str | None: ...
    async def apply_edit(
        self, path: Path, new_text: str | None, old_text: str | None
    ) -> EditOutcome: ...
    async def ask(self, question: str, choices: list[str] | None = None) -> str | None: ...
    async def approve(self, request: ApprovalRequest) -> ApprovalChoice: ...
    async def show_document(self, path: Path) -> None: ...
    async def save_edited(self, paths: list[Path]) -> None: ...
    async def append_owned(self, path: Path, text: str) -> None: ...


def _read(path: Path) -> str | None:
    """The file's text as stored (no newline translation: CRLF files stay CRLF)."""
    try:
        with path.open(encoding="utf-8", newline="") as fh:
            return fh.read()
    except FileNotFoundError:
        return None


def write_atomic(path: Path, text: str | None) -> None:
    """Write via a temp file + rename, so a killed process never leaves half a file."""
    if text is None:
        path.unlink(missing_ok=True)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
        if path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o7777)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class BaseHost:
    """No user attached: reads and writes disk, denies approvals, answers no questions."""

    def __init__(self) -> None:
        self.events: list[TurnEvent] = []

    async def emit(self, event: TurnEvent) -> None:
        self.events.append(event)

    async def read_text(self, path: Path) -> str | None:
        return await asyncio.to_thread(_read, path)

    async def apply_edit(
        self, path: Path, new_text: str | None, old_text: str | None
    ) -> EditOutcome:
        current = await asyncio.to_thread(_read, path)
        if old_text is not None and current != old_text:
            return EditOutcome(
                applied=False, reason=f"{path.name} changed on disk since it was read"
            )
        await asyncio.to_thread(write_atomic, path, new_text)
        return EditOutcome(applied=True)

    async def ask(self, question: str, choices: list[str] | None = None) -> str | None:
        return None

    async def approve(self, request: ApprovalRequest) -> ApprovalChoice:
        return "deny"

    async def show_document(self, path: Path) -> None:
        return None

    async def save_edited(self, paths: list[Path]) -> None:
        """Make what the turn edited visible on disk (before a shell command reads it).
        Edits here are written to disk as they are applied: nothing to do."""
        return None

    async def append_owned(self, path: Path, text: str) -> None:
        """Append to a file the server owns (a transcript); an editor host also updates an
        open buffer of it."""

        def append() -> None:
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("a", encoding="utf-8") as fh:
                fh.write(text)

        await asyncio.to_thread(append)
