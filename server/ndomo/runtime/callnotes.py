"""What the views show of a tool call beyond its result: how its approval was decided, the
sandbox its command ran in, the diff of each file it changed.

The executor opens a `CallNotes` around each call (a context variable: the tool's task
inherits it); the policy, the shell tools and the file writers note into it; the call's
`tool_finished` event carries them and they are stored beside its result, so a reloaded
view shows the same card.
"""

from __future__ import annotations

import asyncio
import contextvars
import difflib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ndomo.runtime.events import Decision, FileDiff

if TYPE_CHECKING:
    from ndomo.runtime.context import TurnContext
    from ndomo.runtime.tools import FileChange

DIFF_SHOWN = 20_000  # characters of one file's diff a card gets (and the store keeps)


@dataclass
class CallNotes:
    call_id: str | None = None  # the live id (tool_started's)
    decision: str | None = None
    sandbox: str | None = None
    files: list[FileDiff] = field(default_factory=list)

    def stored(self) -> dict[str, Any] | None:
        """What is stored beside the call's result (None: nothing to store)."""
        out: dict[str, Any] = {}
        if self.decision:
            out["decision"] = self.decision
        if self.sandbox:
            out["sandbox"] = self.sandbox
        if self.files:
            out["files"] = [f.model_dump(mode="json") for f in self.files]
        return out or None


current_notes: contextvars.ContextVar[CallNotes | None] = contextvars.ContextVar(
    "ndomo_call_notes", default=None
)


async def decided(ctx: TurnContext, text: str, *, auto: bool = False) -> None:
    """An approval of the running call was decided: the views get a line at once, the call's
    stored result keeps it."""
    notes = current_notes.get()
    if notes is not None:
        notes.decision = f"{notes.decision}; {text}" if notes.decision else text
    await ctx.runtime.emit(
        ctx, Decision(call_id=notes.call_id if notes else None, text=text, auto=auto)
    )


def note_sandbox(label: str) -> None:
    notes = current_notes.get()
    if notes is not None:
        notes.sandbox = label


def sandbox_label(sandboxed: bool, network: bool, destinations: list[str] | None) -> str:
    """A shell command's confinement in the card's words."""
    if not sandboxed:
        return "not sandboxed"
    if destinations:
        return "sandboxed · network: " + ", ".join(destinations)
    return "sandboxed · network" if network else "sandboxed · offline"


def file_diff(change: FileChange) -> FileDiff:
    """A change's unified diff, cut at DIFF_SHOWN characters."""
    old_name = "/dev/null" if change.before is None else f"a/{change.path}"
    new_path = change.to or change.path
    new_name = "/dev/null" if change.after is None else f"b/{new_path}"
    before = (change.before or "").splitlines(keepends=True)
    after = (change.after or "").splitlines(keepends=True)
    lines = list(difflib.unified_diff(before, after, old_name, new_name, n=3))
    text = "".join(x if x.endswith("\n") else x + "\n\\ No newline at end of file\n" for x in lines)
    line = first_changed_line(lines)
    kind: Any = change.kind if change.kind in ("create", "modify", "delete", "move") else "modify"
    cut = len(text) > DIFF_SHOWN
    return FileDiff(
        path=new_path if change.after is not None else change.path,
        kind=kind,
        diff=text[:DIFF_SHOWN] if cut else text,
        line=line,
        cut=cut,
    )


def first_changed_line(diff: list[str]) -> int:
    """The new text's first changed line: the first hunk's start plus its leading context."""
    line = 0
    for x in diff:
        if line == 0 and x.startswith("@@"):
            start = x.split("+", 1)[1].split(",", 1)[0].split(" ", 1)[0]
            line = max(1, int(start or 1))
        elif line and x[:1] == " ":
            line += 1
        elif line and x[:1] in "+-":
            break
    return max(1, line)


async def note_changes(changes: list[FileChange]) -> None:
    """The files a call changed (their diffs are made off the event loop)."""
    notes = current_notes.get()
    if notes is None or not changes:
        return
    diffs = await asyncio.to_thread(lambda: [file_diff(c) for c in changes])
    notes.files.extend(diffs)
