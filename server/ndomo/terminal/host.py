"""`ndomo run`'s Host: the answer and tool activity streamed to a terminal, asks and
approvals read from it."""

from __future__ import annotations

import asyncio
import sys

from ndomo.runtime.events import (
    Decision,
    Notice,
    TextDelta,
    ToolFinished,
    ToolOutput,
    ToolStarted,
    TurnEvent,
    TurnFinished,
)
from ndomo.runtime.host import Approval, ApprovalChoice, ApprovalRequest, BaseHost
from ndomo.security.text import OscStripper, one_line, visible


class TerminalHost(BaseHost):
    """`ndomo run`: streams the answer and tool activity to a terminal.

    Everything written is untrusted text (the model's, a command's output, a file's): its
    controls are shown escaped (security.text), and OSC sequences in the answer are
    removed, so nothing printed can move the cursor, rewrite a line or set the clipboard.
    """

    def __init__(
        self, *, assume_yes: bool = False, out=None, interactive: bool | None = None
    ) -> None:
        super().__init__()
        self.assume_yes = assume_yes
        self.out = out or sys.stdout
        self.interactive = sys.stdin.isatty() if interactive is None else interactive
        self._at_line_start = True
        self._last_notice = ""
        self._answer = OscStripper()

    def _print(self, text: str, end: str = "\n") -> None:
        self.out.write(text + end)
        self.out.flush()

    async def emit(self, event: TurnEvent) -> None:
        await super().emit(event)
        if isinstance(event, TextDelta):
            text = visible(self._answer.feed(event.text))
            if text:
                self.out.write(text)
                self.out.flush()
                self._at_line_start = text.endswith("\n")
            return
        held = visible(self._answer.flush())  # an OSC the answer never ended is shown
        if held:
            self.out.write(held)
            self._at_line_start = False
        if isinstance(event, ToolOutput):  # a command's output while it runs, under its call
            text = visible(event.text)
            lead = "    | " if self._at_line_start else ""
            self.out.write(lead + text.replace("\n", "\n    | ").removesuffix("    | "))
            self.out.flush()
            self._at_line_start = text.endswith("\n")
            return
        if not self._at_line_start:
            self._print("")
            self._at_line_start = True
        if isinstance(event, ToolStarted):
            args = ", ".join(one_line(f"{k}={v!r}", 80) for k, v in event.arguments.items())
            self._print(f"  → {one_line(event.name)}({args})")
        elif isinstance(event, ToolFinished):
            where = f" ({event.sandbox})" if event.sandbox else ""
            self._print(
                f"  ← {one_line(event.name)} {event.status}: {visible(event.summary)}{where}"
            )
        elif isinstance(event, Decision):
            self._print(f"  · {visible(event.text)}")
        elif isinstance(event, Notice):
            self._last_notice = event.message
            self._print(f"  ! {visible(event.message)}")
        elif isinstance(event, TurnFinished):
            error = event.error
            err = (
                f" ({visible(error)})" if error and error != self._last_notice else ""
            )  # said once is enough
            self._print(f"[{event.status}]{err}")

    async def _prompt(self, text: str) -> str:
        def read() -> str:
            sys.stderr.write(text)
            sys.stderr.flush()
            return sys.stdin.readline().strip()

        return await asyncio.to_thread(read)

    async def ask(self, question: str, choices: list[str] | None = None) -> str | None:
        if not self.interactive:
            return None
        suffix = f" [{'/'.join(one_line(c, 80) for c in choices)}]" if choices else ""
        return (await self._prompt(f"? {visible(question)}{suffix} ")) or None

    async def approve(self, request: ApprovalRequest) -> ApprovalChoice | Approval:
        # --yes approves ordinary asks; a control file (agent files, config, instructions)
        # needs the user's own answer every time
        if self.assume_yes and request.permission != "control":
            return "once"
        if not self.interactive:
            return "deny"
        full = ""
        if request.subject_cut():  # the whole subject, escaped, before the question
            full = f"  the whole {request.permission} subject:\n    {visible(request.subject)}\n"
        answer = await self._prompt(
            f"{full}? {request.text()}\n  allow? [o]nce / [s]ession / [p]roject / [d]eny / [n]ever "
        )
        choices: dict[str, ApprovalChoice] = {
            "o": "once",
            "s": "session",
            "p": "project",
            "n": "never",
        }
        choice = choices.get(answer[:1].lower(), "deny")
        if choice == "project" and request.rule:
            # the rule "Always" saves, shown to edit (Enter keeps it)
            edited = await self._prompt(f"  save the rule [{visible(request.rule)}]: ")
            return Approval(choice="project", rule=edited.strip() or request.rule)
        return choice
