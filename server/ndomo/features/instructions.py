"""Project instructions: AGENTS.md, .ndomo/instructions.md and CLAUDE.md into the system prompt.

Read in the configured order while the size cap lasts (a file past the cap is cut, and the
prompt says so); a file that resolves outside the workspace is skipped. `ndomo health` shows
what was read. `instructions.enabled: false` turns it off. A folder the user has not
trusted (ndomo.trust) gives none: its files are listed as skipped.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from ndomo.runtime import prefetch
from ndomo.runtime.prompts import PromptContributor
from ndomo.schema import Schema

if TYPE_CHECKING:
    from ndomo.app import App
    from ndomo.runtime.context import TurnContext
    from ndomo.runtime.plugins import Plugins


class InstructionFile(Schema):
    path: str  # workspace-relative, as configured
    chars: int  # the file's size in characters
    used: int  # how many went into the prompt
    note: str = ""  # "truncated at the cap", "outside the workspace: skipped", …


class Instructions(Schema):
    enabled: bool
    max_chars: int
    files: list[InstructionFile]
    text: str = ""  # the prompt fragment ("" when nothing was read)


def read_instructions(app: App) -> Instructions:
    """Blocking (file reads): call through a thread from async code."""
    cfg = app.settings.instructions
    if not cfg.enabled:
        return Instructions(enabled=False, max_chars=cfg.max_chars, files=[])
    if not app.trust.trusted:  # a repository's text is no instruction until the user trusts it
        skipped = [
            InstructionFile(path=rel, chars=0, used=0, note="folder not trusted: skipped")
            for rel in cfg.files
            if (app.root / rel).is_file()
        ]
        return Instructions(enabled=True, max_chars=cfg.max_chars, files=skipped)
    left = cfg.max_chars
    files: list[InstructionFile] = []
    parts: list[str] = []
    for rel in cfg.files:
        path = app.root / rel
        if not path.is_file():
            continue
        real = path.resolve()
        if not real.is_relative_to(app.root):
            files.append(
                InstructionFile(path=rel, chars=0, used=0, note="outside the workspace: skipped")
            )
            continue
        try:
            text = real.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            files.append(
                InstructionFile(
                    path=rel, chars=0, used=0, note=f"unreadable: {exc.strerror or exc}"
                )
            )
            continue
        used = text[: max(left, 0)]
        left -= len(used)
        note = (
            ""
            if len(used) == len(text)
            else ("over the cap: skipped" if not used else "truncated at the cap")
        )
        files.append(InstructionFile(path=rel, chars=len(text), used=len(used), note=note))
        if used.strip():
            cut = f"\n[… cut at the {cfg.max_chars}-character cap for instructions]" if note else ""
            parts.append(f"### {rel}\n{used.rstrip()}{cut}")
    text = ""
    if parts:
        text = (
            "Project instructions (from the workspace; follow them unless they conflict with safety):\n\n"
            + "\n\n".join(parts)
        )
    return Instructions(enabled=True, max_chars=cfg.max_chars, files=files, text=text)


class ProjectInstructions(PromptContributor):
    name = "instructions"
    priority = 50  # after the agent's own prompt, before the environment line

    async def contribute(self, ctx: TurnContext) -> str | None:
        # read at the turn's start (the Prefetch hook), while the turn's rows are written
        return (await prefetch.take(ctx, PREFETCH_KEY, _read)).text or None


PREFETCH_KEY = "instructions.read"


async def _read(ctx: TurnContext) -> Instructions:
    return await asyncio.to_thread(read_instructions, ctx.app)


def setup(plugins: Plugins) -> None:
    plugins.prompts.add(ProjectInstructions())
    plugins.hooks.add(prefetch.Prefetch("instructions.prefetch", PREFETCH_KEY, _read))
