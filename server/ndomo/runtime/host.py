"""The Host: everything a turn needs from whoever drives it (an editor, a terminal, a test).

`BaseHost` works on disk with no user; `LspHost` (in ndomo.lsp) and `TerminalHost`
specialise it. File work runs off the event loop.
"""

from __future__ import annotations

import asyncio
import errno
import os
import stat
import tempfile
from pathlib import Path
from typing import Literal, Protocol

from ndomo.runtime.events import (
    TurnEvent,
)
from ndomo.runtime.problems import Problem
from ndomo.schema import Schema
from ndomo.security.text import one_line

# never: deny, and save a project rule that denies the same subject from now on
ApprovalChoice = Literal["once", "session", "project", "deny", "never"]
SUBJECT_CHARS = 300  # VS Code shows ~1,000 characters of a toast: reason, state, then this
REASON_CHARS = 300
SHORT_REASON_CHARS = 120  # `short()`: the sandbox state follows the reason on its line


class Approval(Schema):
    """An answer with more than a choice: "Always" with the rule the user edited."""

    choice: ApprovalChoice
    rule: str | None = None


class ApprovalRequest(Schema):
    permission: str  # edit, write, bash, webfetch, question, task, plan_db, secret
    subject: str  # the command, path, url or agent the permission is about
    agent: str
    mode: str
    reason: str = ""  # why it is asked (e.g. which simple command did not match)
    network: bool | None = None  # a shell call: whether it gets network if allowed
    sandbox: str = ""  # a shell call: the OS sandbox it runs in ("sandboxed (bubblewrap)", …)
    destinations: list[str] = []  # a shell call: the only hosts it reaches (sandbox.destinations)
    # what "Always" (project) saves: a scoped rule ("pytest *") the user may edit, or the subject
    rule: str = ""

    def text(self) -> str:
        """The question shown to the user (editor and terminal alike), on one line.

        It leads with why it is asked and where the command would run, so padding or
        markup in the subject cannot push them out of sight; the subject is shown with
        its controls escaped, whitespace collapsed and cut at ``SUBJECT_CHARS`` (the full
        subject: ``ndomo run`` prints it escaped, chat views have the call's arguments).
        """
        parts = []
        if self.reason:
            parts.append(one_line(self.reason, REASON_CHARS))
        if self.network is not None:
            parts.append(f"if allowed it runs {self.where()}")
        who = f"ndomo · {one_line(self.agent, 80)} ({one_line(self.mode, 40)})"
        parts.append(f"{who} wants {self.permission}: {self.shown_subject()}")
        if self.rule and self.rule != self.subject:
            parts.append(f"Always saves the rule `{one_line(self.rule, 120)}`")
        return " · ".join(parts)

    def short(self) -> str:
        """The question for a plain editor's notification: at most three short lines.

        Why it is asked and where it would run; who wants what; what the lasting answers
        mean (with the rule "Always" saves). Same order as ``text()``, so padding in the
        subject cannot push the reason or the sandbox state out of sight.
        """
        first = []
        if self.reason:
            first.append(one_line(self.reason, SHORT_REASON_CHARS))
        if self.network is not None:
            first.append(f"if allowed it runs {self.where()}")
        lines = [" · ".join(first)] if first else []
        who = f"{one_line(self.agent, 80)} ({one_line(self.mode, 40)})"
        lines.append(f"{who} wants {self.permission}: {self.shown_subject()}")
        if self.permission != "control":  # a control file is asked every time: nothing saved
            scoped = self.rule and self.rule != self.subject  # else "it" is the subject above
            saved = f"`{one_line(self.rule, 60)}`" if scoped else "it"
            never = "this exact call" if scoped else "it"
            lines.append(
                f"Session: allow {saved} until the session ends · Always: allow it in this"
                f" project · Never: deny {never} in this project"
            )
        return "\n".join(lines)

    def where(self) -> str:
        """A shell call's network and sandbox: "WITH network, sandboxed (bubblewrap)"."""
        net = "WITH network" if self.network else "without network"
        if self.destinations:
            net = "reaching only " + one_line(", ".join(self.destinations), REASON_CHARS)
        return f"{net}, {self.sandbox or 'sandbox unknown'}"

    def shown_subject(self) -> str:
        return one_line(self.subject, SUBJECT_CHARS)

    def subject_cut(self) -> bool:
        """The subject as shown in ``text()`` leaves part of it out."""
        return self.shown_subject() != self.subject


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
    async def approve(self, request: ApprovalRequest) -> ApprovalChoice | Approval: ...
    async def show_document(self, path: Path) -> None: ...
    async def save_edited(self, paths: list[Path]) -> None: ...
    async def append_owned(self, path: Path, text: str) -> None: ...
    async def problems(
        self, paths: list[Path], *, settle: bool = True
    ) -> dict[Path, list[Problem]] | None: ...


def _read(path: Path) -> str | None:
    """The file's text as stored (no newline translation: CRLF files stay CRLF).

    Only a regular file has text: a FIFO, socket or device reads as no file. It is
    opened without blocking (a FIFO with no writer would hold the thread, and the
    turn, beyond cancel) and checked before it is read.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a socket
            return None
        raise
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        if not stat.S_ISREG(mode):
            return None
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    with open(fd, encoding="utf-8", newline="") as fh:
        return fh.read()


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

    async def approve(self, request: ApprovalRequest) -> ApprovalChoice | Approval:
        return "deny"

    async def show_document(self, path: Path) -> None:
        return None

    async def save_edited(self, paths: list[Path]) -> None:
        """Make what the turn edited visible on disk (before a shell command reads it).
        Edits here are written to disk as they are applied: nothing to do."""
        return None

    async def problems(
        self, paths: list[Path], *, settle: bool = True
    ) -> dict[Path, list[Problem]] | None:
        """The diagnostics the editor shows for `paths` (other servers': a type checker's, a
        linter's), after a short wait for them to settle when `settle`; None when nobody
        answers (no editor, or one that does not offer them)."""
        return None

    async def append_owned(self, path: Path, text: str) -> None:
        """Append to a file the server owns (a transcript); an editor host also updates an
        open buffer of it."""

        def append() -> None:
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("a", encoding="utf-8") as fh:
                fh.write(text)

        await asyncio.to_thread(append)
