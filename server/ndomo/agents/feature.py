"""Agents in the runtime: permission policy, the threshold scope guard, `task` delegation,
and turns bound to a plan task. One `setup(plugins)`; the runtime core is untouched."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ndomo.runtime.hooks import HookAction, HookResult, LifecycleHook, Phase
from ndomo.runtime.prompts import PromptContributor

from . import scope as sc
from .contract import DesignWritesOnly
from .delegation import task as task_tool
from .policy import AgentPolicy

if TYPE_CHECKING:
    from ndomo.runtime.context import TurnContext
    from ndomo.runtime.plugins import Plugins
    from ndomo.store.models import Task

log = logging.getLogger("ndomo.agents")


@dataclass
class _BoundTask:
    """The plan task this turn executes (`TurnRequest.task_id`)."""

    task: Task
    plan_slug: str
    plan_title: str


class TaskBinding(LifecycleHook):
    """A turn started on a plan task (`TurnRequest.task_id`) runs it: the task goes to
    running with this agent and session (the plan's audit fields), and the prompt says so."""

    phase = Phase.PRE_AGENT_BUILD
    name = "agents.task_binding"
    priority = 20

    def applies(self, ctx: TurnContext) -> bool:
        return bool(ctx.request.task_id)

    async def run(self, ctx: TurnContext) -> HookResult | None:
        from ndomo.store.errors import StoreError

        store = await ctx.app.store()
        try:
            found = await store.get_task(int(str(ctx.request.task_id).strip()))
            if found.status == "pending":
                found = await store.update_task_status(
                    found.id, "running", agent=ctx.agent_name, session_id=ctx.session.id
                )
            plan = await store.get_plan(found.plan_id)
        except (ValueError, StoreError) as exc:
            ctx.status, ctx.error = "failed", f"cannot run task {ctx.request.task_id!r}: {exc}"
            return HookResult(HookAction.SKIP_AGENT)
        if found.status not in ("running", "pending"):
            ctx.status = "failed"
            ctx.error = (
                f"task {found.id} is {found.status}; only a pending or running task can be executed"
            )
            return HookResult(HookAction.SKIP_AGENT)
        ctx.instance(_BoundTask, lambda: _BoundTask(found, plan.slug, plan.title))
        return None


class TaskPrompt(PromptContributor):
    name = "agents.task"
    priority = 40
    placement = "turn"  # changes every turn: kept out of the cached system prompt

    def applies(self, ctx: TurnContext) -> bool:
        return ctx.existing(_BoundTask) is not None

    async def contribute(self, ctx: TurnContext) -> str | None:
        bound = ctx.existing(_BoundTask)
        assert bound is not None
        t = bound.task
        files = ", ".join(t.files) or "not listed"
        return (
            f"You are executing task {t.id} (step {t.ord}) of plan '{bound.plan_slug}' ({bound.plan_title}): "
            f"{t.description}\nFiles: {files}\nIt is already marked running. When it is done call "
            f"task_update_status with id {t.id}, status done and a short report; if the plan has no pending "
            "task left, complete the plan with plan_update_status."
        )


class ChildTurns(LifecycleHook):
    """Remember delegated turns under a threshold agent, so State 4 can undo their edits too."""

    phase = Phase.PRE_AGENT_BUILD
    name = "agents.child_turns"
    priority = 21

    def applies(self, ctx: TurnContext) -> bool:
        return ctx.parent is not None

    async def run(self, ctx: TurnContext) -> HookResult | None:
        scope = sc.scope_of(ctx.parent) if ctx.parent is not None else None
        if scope is not None and ctx.turn_id is not None:
            scope.child_turns.append(ctx.turn_id)
        return None


class ScopeStart(LifecycleHook):
    """Open the threshold agent's scope: State 3 on a plan task; State 4 up front when the
    request already names more files than the limit."""

    phase = Phase.PRE_EXECUTE
    name = "agents.scope_start"
    priority = 20

    def applies(self, ctx: TurnContext) -> bool:
        return sc.is_scoped(ctx)

    async def run(self, ctx: TurnContext) -> HookResult | None:
        scope = sc.scope_of(ctx)
        assert scope is not None
        bound = ctx.existing(_BoundTask)
        files = list(bound.task.files) if bound else sc.explicit_files(ctx.request.prompt)
        if bound:
            scope.plan, scope.state = f"task:{bound.task.id}", 3
        if len(files) > scope.planned:
            await sc.enter_state4(ctx, scope, len(files))
            ctx.handback = scope.handback
            ctx.answer = scope.handback or ""
            ctx.status = "blocked"
            return HookResult(HookAction.SHORT_CIRCUIT)
        await sc.publish(ctx, scope)
        return None


class ScopeFinish(LifecycleHook):
    phase = Phase.FINALLY
    name = "agents.scope_finish"
    priority = 80  # before turn_finish (90): the turn record gets the hand-back

    def applies(self, ctx: TurnContext) -> bool:
        return sc.is_scoped(ctx) and ctx.existing(sc.Scope) is not None

    async def run(self, ctx: TurnContext) -> HookResult | None:
        scope = ctx.existing(sc.Scope)
        assert scope is not None
        if scope.state == 4:
            ctx.handback = ctx.handback or scope.handback
            if ctx.status in ("done", "running"):
                ctx.status = "blocked"
            await _block_bound_task(ctx, scope.handback or "out of scope")
        files = len(sc.touched(ctx))
        final = scope.final(files, ctx.agent_name, await sc.planner_name(ctx))
        if final:  # otherwise the runtime's own: cleared, or the hand-back / failure
            ctx.final_state = final
        return None


class TaskFinish(LifecycleHook):
    """A task a turn was started on never stays `running` after that turn: the model may
    forget `task_update_status`. Done turn → task done (the answer is its report);
    cancelled → pending again; failed or capped → blocked with the reason."""

    phase = Phase.FINALLY
    name = "agents.task_finish"
    priority = 85  # after scope_finish (80: a hand-back blocks the task), before turn_finish (90)

    def applies(self, ctx: TurnContext) -> bool:
        return ctx.existing(_BoundTask) is not None

    async def run(self, ctx: TurnContext) -> HookResult | None:
        bound = ctx.existing(_BoundTask)
        assert bound is not None
        store = await ctx.app.store()
        try:
            current = await store.get_task(bound.task.id)
            if current.status != "running":
                return None
            agent, sid = ctx.agent_name, ctx.session.id
            if ctx.status == "done":
                report = (
                    " ".join((ctx.answer or "").split())[:500] or f"turn {ctx.turn_id} finished"
                )
                await store.update_task_status(
                    current.id, "done", result=report, agent=agent, session_id=sid
                )
            elif ctx.status == "cancelled":
                await store.update_task_status(current.id, "pending", agent=agent, session_id=sid)
            else:
                reason = ctx.handback or ctx.error or f"the turn ended {ctx.status}"
                await store.update_task_status(
                    current.id, "blocked", error=reason, agent=agent, session_id=sid
                )
        except Exception:  # noqa: BLE001 - the turn has ended; a task left running is logged
            log.exception("could not finish task %s", bound.task.id)
        return None


async def _block_bound_task(ctx: TurnContext, reason: str) -> None:
    """A plan task the turn gave up on is blocked, not left running."""
    bound = ctx.existing(_BoundTask)
    if not bound:
        return
    store = await ctx.app.store()
    try:
        current = await store.get_task(bound.task.id)
        if current.status == "running":
            await store.update_task_status(
                current.id, "blocked", error=reason, agent=ctx.agent_name, session_id=ctx.session.id
            )
    except Exception:  # noqa: BLE001 - the hand-back stands; a task not blocked is logged
        log.exception("could not block task %s", bound.task.id)


def setup(plugins: Plugins) -> None:
    plugins.tools.policy = AgentPolicy()
    plugins.tools.guards.append(DesignWritesOnly())
    plugins.tools.guards.append(sc.ScopeGuard())
    plugins.tools.add(task_tool)
    plugins.hooks.extend([TaskBinding(), ChildTurns(), ScopeStart(), ScopeFinish(), TaskFinish()])
    plugins.prompts.add(TaskPrompt())
