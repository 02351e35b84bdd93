"""Plan tasks as diagnostics on the files they list, the plan's markdown view kept current,
ticked boxes in that view written back, and quick fixes on each task's diagnostic.

One worker refreshes: at once when something in this server may have changed a plan
(a command, a turn's plan or tool event), and whenever `PRAGMA data_version` moves —
which also catches another process (`ndomo task status …` in a terminal).
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.uris import from_fs_path

from ndomo.lsp.server import Feature

if TYPE_CHECKING:  # the store and runtime load after `initialized`, not before initialize
    from ndomo.app import App
    from ndomo.plans.models import PlanDetail, Task
    from ndomo.runtime.context import TurnContext
    from ndomo.runtime.events import TurnEvent

log = logging.getLogger("ndomo.lsp")

POLL_S = 0.3
SEVERITY = {
    "pending": types.DiagnosticSeverity.Information,
    "running": types.DiagnosticSeverity.Information,
    "done": types.DiagnosticSeverity.Hint,
    "failed": types.DiagnosticSeverity.Warning,
    "blocked": types.DiagnosticSeverity.Warning,
}


def _line_range(line: int) -> types.Range:
    return types.Range(start=types.Position(line=line, character=0), end=types.Position(line=line + 1, character=0))


def task_diagnostic(plan: PlanDetail, task: Task, line: int = 0) -> types.Diagnostic:
    return types.Diagnostic(
        range=_line_range(line),
        message=f"plan {plan.slug} · task {task.ord}/{len(plan.tasks)} [{task.status}] {' '.join(task.description.split())}",
        severity=SEVERITY.get(task.status, types.DiagnosticSeverity.Information),
        source="ndomo",
        code=task.id,
        data={"plan": plan.slug, "plan_id": plan.id, "task_id": task.id, "ord": task.ord},
    )


def _short(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


class _Stopper:
    """Registered in app.services so App.aclose stops the poller before the store closes."""

    def __init__(self, task: asyncio.Task) -> None:
        self.task = task

    async def aclose(self) -> None:
        self.task.cancel()
        try:
            await self.task
        except BaseException:
            pass


class PlanDiagnosticsFeature(Feature):
    name = "plan-diagnostics"

    def __init__(self, server) -> None:
        super().__init__(server)
        self.published: dict[str, list[types.Diagnostic]] = {}
        self.tasks: dict[int, Task] = {}  # task id → task, for quick-fix prompts
        self.open_plans: set[str] = set()
        # view path → the text last written to it (disk or buffer): what an editor's copy is
        # based on; a save changes only the tasks whose box differs from it.
        self.view_base: dict[Path, str] = {}
        self._wake = asyncio.Event()
        self._version: int | None = None
        self._status_plan: Any = None  # the status feature sent the first status (plan or not)

    def register(self) -> None:
        self.server.quick_fix_providers.append(self.quick_fixes)
        self.server.save_listeners.append(self.on_save)
        self.server.command_listeners.append(self.on_command)

    async def on_ready(self, app: App) -> None:
        from ndomo.runtime.runtime import Runtime

        Runtime.of(app).event_listeners.append(self.on_event)
        if app.no_store_reason is not None:  # no store: no plans to show
            return
        task = self.server.spawn(self._worker(app))
        app.services["plan_diagnostics"] = _Stopper(task)

    # -- triggers ------------------------------------------------------------------------------
    def poke(self) -> None:
        self._wake.set()

    async def on_command(self, name: str) -> None:
        self.poke()

    async def on_event(self, ctx: TurnContext, event: TurnEvent) -> None:
        if event.kind in ("plan_changed", "tool_finished", "turn_finished"):
            self.poke()

    async def _worker(self, app: App) -> None:
        first = True
        while not self.server.closing:
            try:
                await asyncio.wait_for(self._wake.wait(), POLL_S)
            except asyncio.TimeoutError:
                pass
            woken = self._wake.is_set()
            self._wake.clear()
            if self.server.closing:
                return
            try:
                store = await app.store()
                version = await store.data_version()
                if first or woken or version != self._version:
                    self._version = version
                    await self.refresh(app)
                    first = False
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("plan diagnostics refresh failed")
                await asyncio.sleep(1)

    # -- refresh -------------------------------------------------------------------------------
    async def refresh(self, app: App) -> None:
        from ndomo.plans.errors import StoreError
        from ndomo.plans.models import TERMINAL_PLAN_STATUSES
        store = await app.store()
        plans = [p for p in await store.list_plans(limit=1000) if p.status not in TERMINAL_PLAN_STATUSES]
        diags: dict[str, list[types.Diagnostic]] = defaultdict(list)
        tasks: dict[int, Task] = {}
        open_now: set[str] = set()
        for plan in plans:
            try:
                detail = await store.get_plan(plan.id)
            except StoreError:  # deleted meanwhile
                continue
            open_now.add(detail.id)
            path, where = await self._write_view(app, detail)
            view_uri = from_fs_path(str(path))
            diags[view_uri]  # noqa: B018 — a view with no tasks still gets (empty) diagnostics
            for t in detail.tasks:
                tasks[t.id] = t
                for f in t.files:
                    target = Path(f) if Path(f).is_absolute() else app.root / f
                    diags[from_fs_path(str(target))].append(task_diagnostic(detail, t))
                diags[view_uri].append(task_diagnostic(detail, t, where[t.id]))
        for gone in self.open_plans - open_now:  # finished or archived: its view shows the end state
            try:
                await self._write_view(app, await store.get_plan(gone))
            except StoreError:
                pass
        self.open_plans, self.tasks = open_now, tasks
        self._publish(diags)
        await self._publish_status(app)

    async def _write_view(self, app: App, detail) -> tuple[Path, dict[int, int]]:
        """Write the plan's view — through the editor when it has the view open — and
        remember the text as the base a later save of the view is compared with."""
        from ndomo.lsp.owned import write_owned
        from ndomo.runtime.plan_view import render, view_path

        text, where = render(detail)
        path = view_path(app.root, detail.slug)
        if await write_owned(self.server, path, text):
            self.view_base[path] = text
        return path, where

    def _publish(self, diags: dict[str, list[types.Diagnostic]]) -> None:
        for uri in sorted(set(diags) | set(self.published)):
            new, old = diags.get(uri, []), self.published.get(uri)
            if old == new or (old is None and not new):
                continue
            self.server.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=new))
            if new:
                self.published[uri] = new
            else:
                self.published.pop(uri, None)

    async def _publish_status(self, app: App) -> None:
        """`ndomo/status` carries the session's plan progress: send it when that moved."""
        from ndomo.runtime.runtime import Runtime

        rt = Runtime.of(app)
        state = await rt.session()
        status = await rt.status(state)
        if status.plan != self._status_plan:
            self._status_plan = status.plan
            await rt.publish_status(state)

    # -- the markdown view written back ---------------------------------------------------------
    async def on_save(self, path: str, text: str) -> None:
        from ndomo.plans.errors import StoreError
        from ndomo.runtime.plan_view import VIEW_DIR, task_lines, wanted_changes

        app = self.server.app
        p = Path(path)
        if app is None or p.suffix != ".md" or p.parent != app.root / VIEW_DIR:
            return
        store = await app.store()
        try:
            plan = await store.get_plan(p.stem)
        except StoreError:
            return
        problems = []
        changes = wanted_changes(plan, text)
        base = self.view_base.get(p)
        if base is not None:  # merge: only boxes the user changed; others may be stale, not wishes
            before = {tid: ticked for tid, (_, ticked) in task_lines(base).items()}
            after = {tid: ticked for tid, (_, ticked) in task_lines(text).items()}
            changes = [(tid, st) for tid, st in changes if tid not in before or after.get(tid) != before[tid]]
        for tid, status in changes:
            try:
                await store.update_task_status(tid, status, agent="user")
            except StoreError as exc:
                problems.append(exc.message)
        if problems:
            self.server.window_show_message(
                types.ShowMessageParams(type=types.MessageType.Warning, message="ndomo: " + "; ".join(problems))
            )
        self.poke()

    # -- quick fixes ---------------------------------------------------------------------------
    def quick_fixes(self, params: types.CodeActionParams) -> list[types.CodeAction]:
        out: list[types.CodeAction] = []
        for d in params.context.diagnostics:
            data = d.data if isinstance(d.data, dict) else None
            if d.source != "ndomo" or not data or "task_id" not in data:
                continue
            tid, slug = int(data["task_id"]), str(data.get("plan", ""))
            task = self.tasks.get(tid)
            desc = " ".join(task.description.split()) if task else f"task {tid}"
            ord_ = data.get("ord", "?")
            prompt = f"Do task {ord_} of plan {slug} (task id {tid}): {desc}"
            # Several tasks can mark one line: each title names its task, so the menu tells them apart.
            which = f"task {ord_} ({_short(desc)})"
            for title, command, args in (
                (f"Run {which} with craftsman", "ndomo.turn",
                 {"prompt": prompt, "agent": "craftsman", "mode": "autopilot", "task_id": str(tid)}),
                (f"Mark {which} done", "ndomo.task.status", {"id": tid, "status": "done"}),
                (f"Open plan {slug}", "ndomo.plan.open", {"plan": slug}),
            ):
                if any(a.title == f"ndomo: {title}" for a in out):  # one "open plan" per plan
                    continue
                out.append(
                    types.CodeAction(
                        title=f"ndomo: {title}",
                        kind=types.CodeActionKind.QuickFix,
                        diagnostics=[d],
                        command=types.Command(title=title, command=command, arguments=[args]),
                    )
                )
        return out
