"""The craftsman's 2/5/1 threshold, enforced in code: a guard on every file-changing call.

State 1: up to `direct` distinct files, no plan, at most `direct_lines` changed lines and
one stack (by the routing table). State 2: more files (or lines, or stacks) only once this
turn made a plan (`plan_create` + `task_create_batch`). State 3: the turn executes a plan
task (`TurnRequest.task_id` or a claimed task). State 4: more than `planned` files — the
call is refused, everything the turn (and its delegated sub-turns) changed is restored, the
draft plan the turn created is abandoned (audited), and the turn ends as a hand-back naming
the foreman. Sub-agents the craftsman delegates to count against its scope.
"""

from __future__ import annotations

import asyncio
import difflib
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from pydantic import BaseModel

from ndomo.filetypes import KNOWN
from ndomo.runtime.edits import restore_files, text_before
from ndomo.runtime.tools import PathsUnknown, ToolDescriptor
from ndomo.security.paths import workspace_name

from .routing import EXTENSION_STACKS
from .schema import Threshold

if TYPE_CHECKING:
    from ndomo.runtime.context import TurnContext

log = logging.getLogger("ndomo.agents")

PLAN_CREATE, TASK_BATCH = "plan_create", "task_create_batch"
CLAIM_TOOLS = frozenset({"task_next_for_agent", "task_update_status", "plan_update_status"})


@dataclass
class Scope:
    """Per-turn scope state of a threshold agent; kept in the owner turn (`ctx.instance(Scope, …)`)."""

    direct: int
    planned: int
    direct_lines: int = 50
    state: int = 1
    plan: str | None = None  # how the turn got its plan: created | task:<id> | executing:<slug>
    made: set[str] = field(default_factory=set)  # plan tools that succeeded in this turn
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

    def label(self, files: int, agent: str = "craftsman") -> str:
        """The `state` of `ndomo/status` while the turn runs, in words a user reads at a glance."""
        if self.state == 4:
            return f"{agent}: more than {self.planned} files, out of scope; hand it to the foreman"
        if self.state == 3:
            return f"{agent}: working on a plan task, {files} of {self.planned} files changed"
        if self.state == 2:
            return f"{agent}: {files} of {self.planned} files changed, following its plan"
        return f"{agent}: {files} of {self.direct} files changed"

    def final(self, files: int, agent: str = "craftsman") -> str:
        """What stays in the status after the turn: only a hand-back (it must not pass silently)."""
        if self.state == 4:
            return (
                f"{agent} handed back: more than {self.planned} files; ask the foreman to plan it"
            )
        return ""


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
        Scope,
        lambda: Scope(
            direct=th.direct, planned=th.planned, direct_lines=getattr(th, "direct_lines", 50)
        ),
    )


def rel_path(ctx: TurnContext, path: Path | str) -> str:
    return workspace_name(path, ctx.roots)


def touched(owner: TurnContext) -> list[str]:
    return list(dict.fromkeys(rel_path(owner, p) for p in owner.modified))


async def publish(owner: TurnContext, scope: Scope) -> None:
    """Show the scope state in `ndomo/status` while the turn runs."""
    text = scope.label(len(touched(owner)), owner.agent_name)
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


async def note_tool_done(ctx: TurnContext, name: str) -> None:
    """A plan tool finished: the turn may have entered State 2 or 3."""
    scope = scope_of(ctx)
    if scope is None or scope.state == 4:
        return
    owner = scope_owner(ctx)
    assert owner is not None
    if name == PLAN_CREATE and scope.plans_before is not None:
        store = await owner.app.store()
        for plan in await store.list_plans(status="draft", limit=200):
            if plan.id not in scope.plans_before and plan.id not in scope.created_plans:
                scope.created_plans.append(plan.id)
        scope.plans_before = None
    if name in (PLAN_CREATE, TASK_BATCH):
        scope.made.add(name)
        if {PLAN_CREATE, TASK_BATCH} <= scope.made and scope.plan is None:
            scope.plan, scope.state = "created", 2
    elif name in CLAIM_TOOLS and scope.plan is None:
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


def handback_text(scope: Scope, count: int, restored: list[str], unrestored: list[str]) -> str:
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
        "Switch to the foreman (`/agent foreman`) to plan it; then I execute the plan task by task."
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
        except Exception:
            log.exception("could not abandon draft plan %s", pid)
            continue
        scope.abandoned.append(pid)
        done.append(plan.slug)
    return done


async def enter_state4(owner: TurnContext, scope: Scope, count: int) -> str:
    scope.state = 4
    restored, failed = await rollback_scope(owner, scope)
    scope.restored, scope.unrestored = restored, failed
    scope.handback = handback_text(scope, count, restored, failed)
    drafts = await abandon_own_drafts(owner, scope)
    if drafts:
        scope.handback += f" I abandoned the draft plan(s) I had started: {', '.join(drafts)}."
    await publish(owner, scope)
    return scope.handback


# -- the guard ----------------------------------------------------------------------------


def changed_lines(before: str | None, after: str | None) -> int:
    """Lines a change adds, removes or rewrites (a rewritten line counts once)."""
    a = (before or "").splitlines()
    b = (after or "").splitlines()
    n = 0
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag != "equal":
            n += max(i2 - i1, j2 - j1)
    return n


def _patch_lines(patch: str) -> int:
    """Changed lines of a unified diff: per hunk, the larger of its removed and added lines."""
    total = plus = minus = 0
    for line in patch.splitlines():
        if line.startswith("@@") or line.startswith("--- ") or line.startswith("+++ "):
            total += max(plus, minus)
            plus = minus = 0
        elif line.startswith("+"):
            plus += 1
        elif line.startswith("-"):
            minus += 1
    return total + max(plus, minus)


def stack_of(path: str) -> str | None:
    """The code stack a file belongs to by the routing table (None: not code)."""
    return EXTENSION_STACKS.get(PurePosixPath(path).suffix.lower())


async def _lines_after(
    owner: TurnContext,
    scope: Scope,
    ctx: TurnContext,
    params: BaseModel,
    targets: list[str],
    done: list[str],
) -> int | None:
    """Changed lines of the turn if this call goes through (None: cannot tell beforehand).

    Reads the public arguments of the file tools: `write {path, content}`,
    `edit {path, old_text, new_text}`, `apply_patch {patch}`.
    """
    fields = type(params).model_fields
    before: dict[str, str | None] = {}
    current: dict[str, str | None] = {}
    for p in dict.fromkeys(done + targets):
        current[p] = await owner.host.read_text(owner.app.root / p)
        before[p] = scope.originals.get(p, current[p])
    total = 0
    if "patch" in fields:
        total += _patch_lines(str(getattr(params, "patch", "") or ""))
        after = {p: current[p] for p in targets}
    elif len(targets) == 1 and "content" in fields:
        after = {targets[0]: getattr(params, "content", None)}
    elif len(targets) == 1 and {"old_text", "new_text"} <= set(fields):
        text = current[targets[0]]
        old, new = getattr(params, "old_text", ""), getattr(params, "new_text", "")
        after = {
            targets[0]: text.replace(old, new, 1)
            if text is not None and old and old in text
            else text
        }
    else:
        return None
    for p in dict.fromkeys(done + targets):
        total += await asyncio.to_thread(changed_lines, before[p], after.get(p, current[p]))
    return total


def _needs_plan(scope: Scope, why: str) -> str:
    return (
        f"scope: {why}; without a plan I stay in state 1 (at most {scope.direct} files, {scope.direct_lines} changed "
        f"lines, one stack). Make a plan first: call plan_create, then task_create_batch with the steps and their "
        f"files, then retry this change (state 2). More than {scope.planned} files: hand back and suggest the foreman."
    )


class ScopeGuard:
    """Refuses a file change that would break the agent's threshold (see module doc)."""

    name = "craftsman_scope"

    async def check(self, ctx: TurnContext, tool: ToolDescriptor, params: BaseModel) -> str | None:
        owner = scope_owner(ctx)
        if owner is None:
            return None
        scope = scope_of(ctx)
        assert scope is not None
        if scope.state == 4:
            return scope.handback
        if tool.name == PLAN_CREATE and scope.plans_before is None:
            store = await owner.app.store()
            scope.plans_before = {p.id for p in await store.list_plans(status="draft", limit=200)}
        try:
            paths = tool.declared(params)
        except PathsUnknown as exc:  # fail closed: an unknown write is not counted as none
            return str(exc)
        if paths is None:
            return None  # not a file change it can announce; counted after the fact
        done = touched(owner)
        targets = list(dict.fromkeys(rel_path(ctx, p) for p in paths))
        new = [p for p in targets if p not in done]
        count = len(done) + len(new)
        if new and count > scope.planned:
            return await enter_state4(owner, scope, count)
        if scope.plan is None:
            if count > scope.direct:
                return _needs_plan(
                    scope, f"this would be file {count} of the turn ({', '.join(new)})"
                )
            stacks = sorted({s for s in map(stack_of, done + new) if s})
            if len(stacks) > 1:
                return _needs_plan(
                    scope,
                    f"this would touch {len(stacks)} stacks ({', '.join(stacks)}); "
                    "work across stacks is split into tasks per stack",
                )
            for p in new:
                if p not in scope.originals:
                    scope.originals[p] = await owner.host.read_text(owner.app.root / p)
            lines = await _lines_after(owner, scope, ctx, params, targets, done)
            if lines is not None and lines > scope.direct_lines:
                return _needs_plan(
                    scope,
                    f"this would make {lines} changed lines in the turn, more than "
                    f"{scope.direct_lines}",
                )
            return None
        for p in new:
            if p not in scope.originals:
                scope.originals[p] = await owner.host.read_text(owner.app.root / p)
        return None


async def after_call(ctx: TurnContext) -> None:
    """Count files changed by tools that could not announce them; >planned is State 4."""
    owner = scope_owner(ctx)
    scope = scope_of(ctx) if owner is not None else None
    if owner is None or scope is None or scope.state == 4:
        return
    count = len(touched(owner))
    if count > scope.planned:
        await enter_state4(owner, scope, count)
    else:
        await publish(owner, scope)
