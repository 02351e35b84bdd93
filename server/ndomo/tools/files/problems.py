"""What the editor reports after an edit: its diagnostics for the changed files, given to the
model with the edit's result, and the errors a turn leaves told at its end.

The Host asks the editor (`Host.problems`); a host that cannot answer (the terminal, a plain
LSP client) adds nothing. Before a file's first edit in a turn its problems are read without
a wait, so "new" at the end means: not there before the turn touched the file.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ndomo.lib.workspace import rel
from ndomo.runtime.events import Notice
from ndomo.runtime.hooks import HookResult, LifecycleHook, Phase

if TYPE_CHECKING:
    from pathlib import Path

    from ndomo.runtime.context import TurnContext
    from ndomo.runtime.problems import Problem

SHOWN_PER_FILE = 10  # the model reads the worst first; the rest is counted
SHOWN_TOTAL = 30
MESSAGE_CHARS = 300
SHOWN_SEVERITIES = (None, 1, 2)  # errors and warnings (and those that say nothing)


@dataclass
class EditorProblems:
    """Per turn: each edited file's problems before its first edit, and the latest report."""

    before: dict[Path, list[Problem]] = field(default_factory=dict)
    latest: dict[Path, list[Problem]] = field(default_factory=dict)


def _key(p: Problem) -> tuple:
    return (p.severity, p.source, str(p.code), p.message)  # lines move as the file changes


async def before_edit(ctx: TurnContext, paths: list[Path]) -> None:
    """Read the editor's problems of files this turn has not edited yet (no settle wait)."""
    state = _state(ctx)
    fresh = [p for p in paths if p not in state.before]
    if not fresh:
        return
    found = await ctx.host.problems(fresh, settle=False)
    for path in fresh:
        state.before[path] = (found or {}).get(path, [])


async def after_edit(ctx: TurnContext, paths: list[Path]) -> str:
    """The editor's problems for the edited files, for the tool's result ("" when the host
    cannot tell)."""
    found = await ctx.host.problems(paths)
    if found is None:
        return ""
    _state(ctx).latest.update(found)
    return "\n" + render(ctx, found)


def render(ctx: TurnContext, found: dict[Path, list[Problem]]) -> str:
    shown_total, lines = 0, []
    for path, problems in found.items():
        name = rel(ctx, path)
        worst = sorted(
            (p for p in problems if p.severity in SHOWN_SEVERITIES), key=lambda p: p.severity or 1
        )
        if not worst:
            lines.append(f"- {name}: no errors or warnings")
            continue
        room = max(0, min(SHOWN_PER_FILE, SHOWN_TOTAL - shown_total))
        for p in worst[:room]:
            text = p.describe()
            cut = text if len(text) <= MESSAGE_CHARS else text[: MESSAGE_CHARS - 1] + "…"
            lines.append(f"- {name} {cut}")
        shown_total += min(room, len(worst))
        if len(worst) > room:
            lines.append(f"- {name}: {len(worst) - room} more not shown")
    return "the editor now reports:\n" + "\n".join(lines)


def new_errors(state: EditorProblems) -> dict[Path, list[Problem]]:
    """The errors of the latest reports that were not there before the turn's first edit."""
    out = {}
    for path, now in state.latest.items():
        had = Counter(_key(p) for p in state.before.get(path, []) if p.severity == 1)
        fresh = []
        for p in now:
            if p.severity != 1:
                continue
            if had[_key(p)]:
                had[_key(p)] -= 1
            else:
                fresh.append(p)
        if fresh:
            out[path] = fresh
    return out


def _state(ctx: TurnContext) -> EditorProblems:
    top = ctx
    while top.parent is not None:  # a sub-agent's edits are its caller's turn's too
        top = top.parent
    return top.instance(EditorProblems, EditorProblems)


class LeftErrors(LifecycleHook):
    """A turn whose edits leave new errors in the editor says so in its answer and status
    (autopilot ends unattended: the user must not read "done" and miss them)."""

    phase = Phase.FINALLY
    name = "files.left_errors"
    before = ("turn_finish",)

    async def run(self, ctx: TurnContext) -> HookResult | None:
        state = ctx.existing(EditorProblems)
        if ctx.depth > 0 or state is None:
            return None
        fresh = new_errors(state)
        if not fresh:
            return None
        count = sum(len(v) for v in fresh.values())
        where = ", ".join(rel(ctx, p) for p in fresh)
        first = next(iter(fresh.values()))[0].describe()[:MESSAGE_CHARS]
        notice = (
            f"Note: the editor reports {count} new error{'s' if count > 1 else ''} in {where} "
            f"after this turn's edits (first: {first})."
        )
        # in the answer (the summary, a notification) and as a notice (chat views show the
        # streamed text, not the final answer)
        ctx.answer = f"{ctx.answer.rstrip()}\n\n{notice}" if ctx.answer.strip() else notice
        await ctx.runtime.emit(ctx, Notice(level="warning", message=notice))
        if not ctx.final_state:
            ctx.final_state = f"{count} new error{'s' if count > 1 else ''} in {where}"[:120]
        return None
