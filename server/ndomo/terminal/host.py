"""`ndomo run`'s Host: the answer and tool activity streamed to a terminal, asks and
approvals read from it."""

from __future__ import annotations

import asyncio
import sys

from ndomo.runtime.events import (
    Notice,
    TextDelta,
    ToolFinished,
    ToolOutput,
    ToolStarted,
    TurnEvent,
    TurnFinished,
)
from ndomo.runtime.host import ApprovalChoice, ApprovalRequest, BaseHost


class TerminalHost(BaseHost):
    """`ndomo run`: streams the answer and tool activity to a terminal."""

    def __init__(
        self, *, assume_yes: bool = False, out=None, interactive: bool | None = None
    ) -> None:
        super().__init__()
        self.assume_yes = assume_yes
        self.out = out or sys.stdout
        self.interactive = sys.stdin.isatty() if interactive is None else interactive
        self._at_line_start = True
        self._last_notice = ""

    def _print(self, text: str, end: str = "\n") -> None:
        self.out.write(text + end)
        self.out.flush()

    async def emit(self, event: TurnEvent) -> None:
        await super().emit(event)
        if isinstance(event, TextDelta):
            self.out.write(event.text)
            self.out.flush()
            self._at_line_start = event.text.endswith("\n")
            return
        if isinstance(event, ToolOutput):  # a command's output while it runs, under its call
            text = event.text
            lead = "    | " if self._at_line_start else ""
            self.out.write(lead + text.replace("\n", "\n    | ").removesuffix("    | "))
            self.out.flush()
            self._at_line_start = text.endswith("\n")
            return
        if not self._at_line_start:
            self._print("")
            self._at_line_start = True
        if isinstance(event, ToolStarted):
            args = ", ".join(f"{k}={v!r}"[:80] for k, v in event.arguments.items())
            self._print(f"  → {event.name}({args})")
        elif isinstance(event, ToolFinished):
            self._print(f"  ← {event.name} {event.status}: {event.summary}")
        elif isinstance(event, Notice):
            self._last_notice = event.message
            self._print(f"  ! {event.message}")
        elif isinstance(event, TurnFinished):
            error = event.error
            err = (
                f" ({error})" if error and error != self._last_notice else ""
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
        suffix = f" [{'/'.join(choices)}]" if choices else ""
        return (await self._prompt(f"? {question}{suffix} ")) or None

    async def approve(self, request: ApprovalRequest) -> ApprovalChoice:
        # --yes approves ordinary asks; a control file (agent files, config, instructions)
        # needs the user's own answer every time
        if self.assume_yes and request.permission != "control":
            return "once"
        if not self.interactive:
            return "deny"
        answer = await self._prompt(
            f"? {request.text()}\n  allow? [o]nce / [s]ession / [p]roject / [d]eny "
        )
        choices: dict[str, ApprovalChoice] = {"o": "once", "s": "session", "p": "project"}
        return choices.get(answer[:1].lower(), "deny")
