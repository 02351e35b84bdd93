"""The 2/5/1 threshold, enforced in code: a guard on every file-changing call.

Applies to every agent whose frontmatter sets `threshold` (the shipped craftsman has one).
State 1: up to `direct` distinct files, no plan, at most `direct_lines` changed lines and
one stack (by the routing table). State 2: more files (or lines, or stacks) only once this
turn made a plan (a tool with `plan_step="drafts_plan"`, then one with "adds_tasks"). State
3: the turn executes a plan task (`TurnRequest.task_id`, or a "starts_work" tool left a plan
executing for it). State 4: more than `planned` files — the call is refused, everything the
turn (and its delegated sub-turns) changed is restored, the draft plan the turn created is
abandoned (audited), and the turn ends as a hand-back naming the planner (the agent with
`writes: design`). Sub-agents a scoped agent delegates to count against its scope.

Files and lines are counted from each tool's declared changes (`ToolDescriptor.changes`),
the same ones the tool then applies: no guessing from argument names.
"""

from __future__ import annotations

import asyncio
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from pydantic import BaseModel

from ndomo.filetypes import KNOWN
from ndomo.runtime.edits import restore_files, text_before
from ndomo.runtime.tools import (
    FileChange,
    PathsUnknown,
    PlanStep,
    ToolDescriptor,
    ToolError,
    ToolGuard,
    ToolResult,
    changed_lines,
)
from ndomo.security.paths import workspace_name

from .contract import agent_for, tools_named
from .routing import EXTENSION_STACKS
from .schema import Threshold

if TYPE_CHECKING:
    from ndomo.runtime.context import TurnContext

log = logging.getLogger("ndomo.agents")


@dataclass
class Scope:
    """Per-turn scope state of a threshold agent; kept in the owner turn (`ctx.instance(Scope, …)`)."""

    direct: int
    planned: int
    direct_lines: int = 50
    state: int = 1
    plan: str | None = None  # how the turn got its plan: created | task:<id> | executing:<slug>
    made: set[PlanStep] = field(default_factory=set)  # plan steps that succeeded in this turn
    originals: dict[str, str | None] = field(
        default_factory=dict
    )  # rel path → text before the turn
    child_turns: list[int] = field(default_factory=list)
    handback: str | None = None
    restored: list[str] = field(default_factory=list)
    unrestored: list[str] = field(default_factory=list)
    plans_before: set[str] | None = None  # plan ids that existed before this turn's plan_create
    created_plans: list[str] = field(default_factory=list)  # plans this turn created
    abandoned: list[str] = field(default_factory=list)  # drafts abandoned at State 4

    def label(self, files: int, agent: str, planner: str) -> str:
        """The `state` of `ndomo/status` while the turn runs, in words a user reads at a glance."""
        if self.state == 4:
            return (
                f"{agent}: more than {self.planned} files, out of scope; hand it to the {planner}"
            )
        if self.state == 3:
            return f"{agent}: working on a plan task, {files} of {self.planned} files changed"
        if self.state == 2:
            return f"{agent}: {files} of {self.planned} files changed, following its plan"
        if not files:
            return ""  # nothing changed yet: "0 of 2 files changed" would only puzzle
        return f"{agent}: {files} of {self.direct} files changed"

    def final(self, files: int, agent: str, planner: str) -> str:
        """What stays in the status after the turn: only a hand-back (it must not pass silently)."""
        if self.state == 4:
            return (
                f"{agent} handed back: more than {self.planned} files; ask the {planner} to plan it"
            )
        return ""


async def planner_name(ctx: TurnContext) -> str:
    """Who plans what is out of scope: the agent whose contract is `writes: design`."""
    return await agent_for(ctx, "planner") or "planner"


def is_scoped(ctx: TurnContext) -> bool:
    agent = ctx.agent
    return agent is not None and agent.threshold is not None


def scope_owner(ctx: TurnContext | None) -> TurnContext | None:
    """The nearest turn (this one or a delegating one) whose agent has a threshold."""
    while ctx is not None:
        if is_scoped(ctx):
            return ctx
        ctx = ctx.parent
    return None


def scope_of(ctx: TurnContext) -> Scope | None:
    owner = scope_owner(ctx)
    if owner is None:
        return None
    own = owner.agent.threshold if owner.agent else None  # `true`: the configured one
    th = own if isinstance(own, Threshold) else owner.app.settings.threshold
    return owner.instance(
        Scope, lambda: Scope(direct=th.direct, planned=th.planned, direct_lines=th.direct_lines)
    )


def rel_path(ctx: TurnContext, path: Path | str) -> str:
    return workspace_name(path, ctx.roots)


def touched(owner: TurnContext) -> list[str]:
    return list(dict.fromkeys(rel_path(owner, p) for p in owner.modified))


async def publish(owner: TurnContext, scope: Scope) -> None:
    """Show the scope state in `ndomo/status` while the turn runs."""
    text = scope.label(len(touched(owner)), owner.agent_name, await planner_name(owner))
    if owner.session.last_outcome != text:
        owner.session.last_outcome = text
        await owner.runtime.publish_status(owner.session)


# -- plan detection ---------------------------------------------------------------------


async def executing_plan(owner: TurnContext) -> str | None:
    """Slug of an executing plan this session (or this agent) runs, if any."""
    store = await owner.app.store()
    for plan in await store.list_plans(status="executing"):
        if plan.executed_by_session == owner.session.id:
            return plan.slug
        running = await store.list_tasks(plan.id, status="running")
        if any(t.claimed_by == owner.agent_name for t in running):
            return plan.slug
    return None


async def note_tool_done(ctx: TurnContext, step: PlanStep) -> None:
    """A plan step finished: the turn may have entered State 2 or 3."""
    scope = scope_of(ctx)
    if scope is None or scope.state == 4:
        return
    owner = scope_owner(ctx)
    assert owner is not None
    if step == "drafts_plan" and scope.plans_before is not None:
        store = await owner.app.store()
        for plan in await store.list_plans(status="draft", limit=200):
            if plan.id not in scope.plans_before and plan.id not in scope.created_plans:
                scope.created_plans.append(plan.id)
        scope.plans_before = None
    if step in ("drafts_plan", "adds_tasks"):
        scope.made.add(step)
        if {"drafts_plan", "adds_tasks"} <= scope.made and scope.plan is None:
            scope.plan, scope.state = "created", 2
    elif step == "starts_work" and scope.plan is None:
        slug = await executing_plan(owner)
        if slug:
            scope.plan, scope.state = f"executing:{slug}", 3
    await publish(owner, scope)


# -- explicit scope -----------------------------------------------------------------------

_PATHISH = re.compile(
    r"(?<![\w/.:-])((?:[\w.-]+/)*[\w-][\w.-]*\.[A-Za-z][A-Za-z0-9]{0,7})(?![\w/-])"
)


def explicit_files(prompt: str) -> list[str]:
    """File paths a prompt names outright (`a.py`, `src/b.ts`), for the up-front State 4 check."""
    out: list[str] = []
    for m in _PATHISH.finditer(prompt):
        token = m.group(1).rstrip(".")
        suffix = PurePosixPath(token).suffix.lower()
        if suffix in KNOWN:
            out.append(token)
    return list(dict.fromkeys(out))


# -- state 4 ------------------------------------------------------------------------------


def handback_text(
    scope: Scope, count: int, restored: list[str], unrestored: list[str], planner: str
) -> str:
    parts = [
        f"[out of my domain] this work needs {count} files, more than my limit of {scope.planned}."
    ]
    if restored:
        parts.append(
            f"I rolled back the {len(restored)} file(s) this turn changed: {', '.join(restored)}."
        )
    if unrestored:
        parts.append(f"Could NOT restore: {', '.join(unrestored)} — check them by hand.")
    parts.append(
        f"Switch to the {planner} (`/agent {planner}`) to plan it; then I execute the plan task by task."
    )
    return " ".join(parts)


async def rollback_scope(owner: TurnContext, scope: Scope) -> tuple[list[str], list[str]]:
    """Restore every file the owner turn and its sub-turns changed; (restored, failed)."""
    store = await owner.app.store()
    edits = []
    for turn_id in [owner.turn_id, *scope.child_turns]:
        if turn_id is not None:
            edits.extend(await store.turn_edits(turn_id))
    before = text_before(edits)
    changed = set(before) | set(touched(owner))
    # The guard's snapshots are taken before any sub-turn writes, so they win.
    before.update({p: t for p, t in scope.originals.items() if p in changed})
    unknown = sorted(changed - set(before))  # no text to go back to
    texts = {path: before[path] for path in sorted(changed) if path in before}
    restored, refused = await restore_files(owner.host, owner.app.root, texts)
    return restored, sorted([*unknown, *refused])


async def abandon_own_drafts(owner: TurnContext, scope: Scope) -> list[str]:
    """State 4: the draft plans this turn created are abandoned (audited), so no orphan
    drafts remain; a plan that moved on from draft is left alone."""
    store = await owner.app.store()
    done = []
    for pid in scope.created_plans:
        if pid in scope.abandoned:
            continue
        try:
            plan = await store.get_plan(pid)
            if plan.status != "draft":
                continue
            await store.update_plan_status(
                pid,
                "abandoned",
                actor=owner.agent_name,
                session_id=owner.session.id,
                reason=f"{owner.agent_name} went out of scope (State 4) in the turn that drafted it",
            )
        except Exception:  # noqa: BLE001 - one plan that cannot be abandoned must not keep the others
            log.exception("could not abandon draft plan %s", pid)
            continue
        scope.abandoned.append(pid)
        done.append(plan.slug)
    return done


async def enter_state4(owner: TurnContext, scope: Scope, count: int) -> str:
    scope.state = 4
    restored, failed = await rollback_scope(owner, scope)
    scope.restored, scope.unrestored = restored, failed
    scope.handback = handback_text(scope, count, restored, failed, await planner_name(owner))
    drafts = await abandon_own_drafts(owner, scope)
    if drafts:
        scope.handback += f" I abandoned the draft plan(s) I had started: {', '.join(drafts)}."
    await publish(owner, scope)
    return scope.handback


# -- the guard ----------------------------------------------------------------------------


def stack_of(path: str) -> str | None:
    """The code stack a file belongs to by the routing table (None: not code)."""
    return EXTENSION_STACKS.get(PurePosixPath(path).suffix.lower())


async def lines_after(
    owner: TurnContext, scope: Scope, changes: list[FileChange], done: list[str]
) -> int:
    """Changed lines of the turn if this call's declared changes go through: per file, its
    text before the turn against its text after (a move counts once, from the old text to
    the new); a change that gives only a line count adds that count."""
    after: dict[str, str | None] = {}
    skip: set[str] = set()
    total = 0
    texts: dict[str, str | None] = {}

    async def original(p: str) -> str | None:
        if p not in texts:
            texts[p] = await owner.host.read_text(owner.app.root / p)
        return scope.originals.get(p, texts[p])

    for c in changes:
        names = [rel_path(owner, p) for p in c.paths]
        if c.lines is not None:
            total += c.lines
        elif c.kind == "move":
            total += await asyncio.to_thread(changed_lines, await original(names[0]), c.after)
            skip.update(names)
        else:
            after[names[0]] = c.after
    for p in dict.fromkeys([*done, *after]):
        if p in skip:
            continue
        before = await original(p)  # reads the current text too
        now = after[p] if p in after else texts[p]
        total += await asyncio.to_thread(changed_lines, before, now)
    return total


async def _needs_plan(ctx: TurnContext, scope: Scope, why: str) -> str:
    drafts, tasks = tools_named(ctx, "drafts_plan"), tools_named(ctx, "adds_tasks")
    return (
        f"scope: {why}; without a plan I stay in state 1 (at most {scope.direct} files, {scope.direct_lines} changed "
        f"lines, one stack). Make a plan first: call {drafts}, then {tasks} with the steps and their "
        f"files, then retry this change (state 2). More than {scope.planned} files: hand back and suggest the "
        f"{await planner_name(ctx)}."
    )


class ScopeGuard(ToolGuard):
    """Refuses a file change that would break the agent's threshold (see module doc), and
    after each call follows the turn's plan steps and counts the files changed by tools
    that could not announce them (State 4 ends the turn)."""

    name = "threshold_scope"

    async def check(self, ctx: TurnContext, tool: ToolDescriptor, params: BaseModel) -> str | None:
        owner = scope_owner(ctx)
        if owner is None:
            return None
        scope = scope_of(ctx)
        assert scope is not None
        if scope.state == 4:
            return scope.handback
        if tool.plan_step == "drafts_plan" and scope.plans_before is None:
            store = await owner.app.store()
            scope.plans_before = {p.id for p in await store.list_plans(status="draft", limit=200)}
        try:
            changes = await tool.changed(ctx, params)
        except (PathsUnknown, ToolError) as exc:  # fail closed: an unknown write is not none
            return str(exc)
        if changes is None:
            return None  # not a file change it can announce; counted after the fact
        done = touched(owner)
        targets = list(dict.fromkeys(rel_path(ctx, p) for c in changes for p in c.paths))
        new = [p for p in targets if p not in done]
        count = len(done) + len(new)
        if new and count > scope.planned:
            return await enter_state4(owner, scope, count)
        for p in new:
            if p not in scope.originals:
                scope.originals[p] = await owner.host.read_text(owner.app.root / p)
        if scope.plan is not None:
            return None
        if count > scope.direct:
            return await _needs_plan(
                ctx, scope, f"this would be file {count} of the turn ({', '.join(new)})"
            )
        stacks = sorted({s for s in map(stack_of, done + new) if s})
        if len(stacks) > 1:
            return await _needs_plan(
                ctx,
                scope,
                f"this would touch {len(stacks)} stacks ({', '.join(stacks)}); "
                "work across stacks is split into tasks per stack",
            )
        lines = await lines_after(owner, scope, changes, done)
        if lines > scope.direct_lines:
            return await _needs_plan(
                ctx,
                scope,
                f"this would make {lines} changed lines in the turn, more than {scope.direct_lines}",
            )
        return None

    async def after(
        self, ctx: TurnContext, tool: ToolDescriptor | None, result: ToolResult
    ) -> ToolResult:
        """Note plan steps, count files, and end the turn once State 4 is hit."""
        owner = scope_owner(ctx)
        if owner is None:
            return result
        if result.status == "done" and tool is not None and tool.plan_step is not None:
            await note_tool_done(ctx, tool.plan_step)
        scope = scope_of(ctx)
        assert scope is not None
        if scope.state != 4:
            count = len(touched(owner))
            if count > scope.planned:
                await enter_state4(owner, scope, count)
            else:
                await publish(owner, scope)
        if scope.state == 4:
            ctx.handback = ctx.handback or scope.handback
            if not result.ends_turn:
                result = result.model_copy(update={"ends_turn": True})
        return result
