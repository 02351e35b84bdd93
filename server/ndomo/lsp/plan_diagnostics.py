"""Plan tasks as diagnostics on the files they list, the plan's markdown view kept current,
ticked boxes in that view written back, and quick fixes on each task's diagnostic.

Nothing runs while nothing changes. A refresh is woken by this server's own commits
(the store's commit listeners), by a command or a turn's plan/tool event, and by other
processes' commits (an inotify watch on the database files, read through the event loop;
a ≥ 5 s poll of their stamp where inotify is missing). Wakes are debounced, and a refresh
re-reads only the plans whose `updated_at` moved (every write to a plan or its tasks moves
it, in SQL): at 1,000 open plans a tool call that changed nothing costs one index read.
Every open plan gets diagnostics; there is no cap.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.uris import from_fs_path

from ndomo.lsp.names import pick
from ndomo.lsp.protocol import DIAGNOSTIC_SOURCE, TaskData, command
from ndomo.lsp.server import Feature

if TYPE_CHECKING:  # the store and runtime load after `initialized`, not before initialize
    from ndomo.app import App
    from ndomo.runtime.context import TurnContext
    from ndomo.runtime.events import TurnEvent
    from ndomo.store.models import PlanDetail, Task

log = logging.getLogger("ndomo.lsp")

DEBOUNCE_S = 0.03  # a burst of commits (a batch of tasks, a turn's tool calls) → one refresh
# Plans are re-read from (newest updated_at seen − this): a commit whose timestamp was taken
# before another process's later commit is still seen; rows this recent are re-read anyway.
OVERLAP = timedelta(seconds=10)
VIEW_RETRY_S = 1.0  # an open view that refused an update is tried again after this
SETTLE = timedelta(seconds=1)  # updated_at has ms resolution: a stamp this young may move again
SEVERITY = {
    "pending": types.DiagnosticSeverity.Information,
    "running": types.DiagnosticSeverity.Information,
    "done": types.DiagnosticSeverity.Hint,
    "failed": types.DiagnosticSeverity.Warning,
    "blocked": types.DiagnosticSeverity.Warning,
}


def _line_range(line: int) -> types.Range:
    return types.Range(
        start=types.Position(line=line, character=0), end=types.Position(line=line + 1, character=0)
    )


def task_diagnostic(plan: PlanDetail, task: Task, line: int = 0) -> types.Diagnostic:
    return types.Diagnostic(
        range=_line_range(line),
        message=f"plan {plan.slug} · task {task.ord}/{len(plan.tasks)} [{task.status}] "
        + " ".join(task.description.split()),
        severity=SEVERITY.get(task.status, types.DiagnosticSeverity.Information),
        source=DIAGNOSTIC_SOURCE,
        code=task.id,
        data=TaskData(plan=plan.slug, plan_id=plan.id, task_id=task.id, ord=task.ord),
    )


def _short(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _parse(ts: str) -> datetime:
    return datetime.fromisoformat(ts.replace("Z", "+00:00"))


def _fmt(t: datetime) -> str:
    return t.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class _Stopper:
    """Registered with app.close_with so App.aclose stops the worker and the watch before the store closes."""

    def __init__(self, task: asyncio.Task, watch: Any) -> None:
        self.task = task
        self.watch = watch

    async def aclose(self) -> None:
        if self.watch is not None:
            watch, self.watch = self.watch, None
            watch.close()
        self.task.cancel()
        outcome: object = (await asyncio.gather(self.task, return_exceptions=True))[0]
        if isinstance(outcome, Exception):
            log.error("plan diagnostics watcher failed", exc_info=outcome)


class _PlanEntry:
    """What one open plan contributes: its stamp, tasks and diagnostics per uri."""

    __slots__ = ("updated_at", "settled", "tasks", "diags")

    def __init__(self, updated_at: str, settled: bool, tasks: dict, diags: dict) -> None:
        self.updated_at = updated_at
        self.settled = settled
        self.tasks: dict[int, Task] = tasks
        self.diags: dict[str, list[types.Diagnostic]] = diags


class PlanDiagnosticsFeature(Feature):
    """Routes the server's events to each folder's `FolderPlans` (one per App with a store)."""

    name = "plan-diagnostics"

    def __init__(self, server) -> None:
        super().__init__(server)
        self.folders: dict[Path, FolderPlans] = {}  # folder root → its plans

    def register(self) -> None:
        self.server.quick_fix_providers.add(self.quick_fixes)
        self.server.save_listeners.add(self.on_save)
        self.server.command_listeners.add(self.on_command)

    async def on_ready(self, app: App) -> None:
        plans = FolderPlans(self.server)
        if await plans.start(app):
            self.folders[app.root] = plans

    async def on_close(self, app: App) -> None:
        plans = self.folders.pop(app.root, None)
        if plans is not None:
            await plans.close()

    async def on_command(self, name: str) -> None:
        for plans in self.folders.values():  # a command may have changed any folder's store
            plans.poke()

    async def on_save(self, path: str, text: str) -> None:
        app = self.server.app_of(path)
        plans = self.folders.get(app.root) if app is not None else None
        if plans is not None:
            await plans.on_save(path, text)

    def quick_fixes(self, params: types.CodeActionParams) -> list[types.CodeAction]:
        app = self.server.app_for(params.text_document.uri)
        plans = self.folders.get(app.root) if app is not None else None
        return plans.quick_fixes(params) if plans is not None else []


class FolderPlans:
    """One folder's open plans: their diagnostics, views and status, kept current."""

    def __init__(self, server) -> None:
        self.server = server
        self.app: App | None = None
        self._stopper: _Stopper | None = None
        self.published: dict[str, list[types.Diagnostic]] = {}
        self.plans: dict[str, _PlanEntry] = {}  # open plan id → what it contributes
        self.by_uri: dict[str, set[str]] = {}  # uri → open plan ids with diagnostics there
        self.refreshes = 0  # how many refreshes ran (tests, benchmarks)
        self.reread = 0  # how many plans those refreshes read in full
        self.watch_kind: str | None = None
        self._since: str | None = None  # re-read plans whose updated_at is ≥ this
        # view path → the text last written to it (disk or buffer): what an editor's copy is
        # based on; a save changes only the tasks whose box differs from it.
        self.view_base: dict[Path, str] = {}
        self._wake = asyncio.Event()
        self._status_plan: Any = None  # (session, mode, agent, plan) last sent

    @property
    def tasks(self) -> dict[int, Task]:
        """Task id → task of every open plan, for quick-fix prompts."""
        return {tid: t for e in self.plans.values() for tid, t in e.tasks.items()}

    async def start(self, app: App) -> bool:
        """Watch `app`'s store and publish its plans; False: no store, nothing to show."""
        from ndomo.runtime.runtime import Runtime
        from ndomo.store.watch import DbWatch

        self.app = app
        Runtime.of(app).event_listeners.add(self.on_event)
        if app.no_store_reason is not None:  # no store: no plans to show
            return False
        store = await app.store()
        store.commit_listeners.add(self.poke)
        watch = None
        db_path = getattr(store, "db_path", None)
        if db_path is not None:
            watch = DbWatch(Path(db_path), self.poke)
            self.watch_kind = watch.start()
        task = self.server.spawn(self._worker(app))
        self._stopper = _Stopper(task, watch)
        app.close_with(self._stopper)
        self.poke()  # the first refresh
        return True

    async def close(self) -> None:
        """The folder left the workspace: its diagnostics are cleared in the editor (the
        worker and watch stop first, so no refresh publishes them again)."""
        if self._stopper is not None:
            await self._stopper.aclose()
        for uri in sorted(self.published):
            self.server.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri=uri, diagnostics=[])
            )
        self.published.clear()

    # -- triggers ------------------------------------------------------------------------------
    def poke(self) -> None:
        self._wake.set()

    async def on_event(self, ctx: TurnContext, event: TurnEvent) -> None:
        if event.kind in ("plan_changed", "tool_finished", "turn_finished"):
            self.poke()

    async def _worker(self, app: App) -> None:
        while not self.server.closing:
            await self._wake.wait()  # no timeout: nothing runs until something may have changed
            await asyncio.sleep(DEBOUNCE_S)
            self._wake.clear()
            if self.server.closing:
                return
            try:
                await self.refresh(app)
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - the watcher outlives a failed refresh and starts over
                log.exception("plan diagnostics refresh failed")
                self._since = None  # start over from every live plan next time

    # -- refresh -------------------------------------------------------------------------------
    async def refresh(self, app: App) -> None:
        """Re-read the plans whose `updated_at` moved; publish the uris whose diagnostics changed."""
        self.refreshes += 1
        store = await app.store()
        dirty: set[str] = set()
        full = self._since is None
        await self._apply(app, store, await store.plan_changes(self._since), full, dirty)
        self._publish(dirty)
        await self._publish_status(app)

    async def _apply(self, app: App, store: Any, stamps: list, full: bool, dirty: set[str]) -> None:
        from ndomo.store.errors import StoreError

        now = datetime.now(UTC)
        newest = None if full else self._since
        live: set[str] = set()
        for stamp in stamps:
            newest = stamp.updated_at if newest is None or stamp.updated_at > newest else newest
            entry = self.plans.get(stamp.id)
            if stamp.live:
                live.add(stamp.id)
                if entry is not None and entry.settled and entry.updated_at == stamp.updated_at:
                    continue
            elif entry is None:
                continue  # never open here, nothing to clear
            try:
                detail = await store.get_plan(stamp.id)
            except StoreError:  # deleted meanwhile
                detail = None
            self.reread += 1
            if detail is None:
                self._set(stamp.id, None, dirty)
                continue
            path, where, shown = await self._write_view(
                app, detail
            )  # a finished plan's view shows the end
            if stamp.live:
                settled = shown and now - _parse(detail.updated_at) > SETTLE
                self._set(detail.id, self._entry(app, detail, path, where, settled), dirty)
            else:
                self._set(stamp.id, None, dirty)
        if full:
            for gone in set(self.plans) - live:
                with contextlib.suppress(StoreError):
                    await self._write_view(app, await store.get_plan(gone))
                self._set(gone, None, dirty)
        if newest is not None:
            self._since = _fmt(min(_parse(newest), now) - OVERLAP)

    async def _write_view(self, app: App, detail: PlanDetail) -> tuple[Path, dict[int, int], bool]:
        """Write the plan's view — through the editor when it has the view open — and
        remember the text as the base a later save of the view is compared with.

        An open buffer that refused the edit (its version moved meanwhile) would stay stale
        for good, since nothing changes in the store again: the plan stays unsettled and one
        more refresh is asked for shortly (bounded: the change feed drops the plan once its
        stamp is older than the overlap window)."""
        from ndomo.lsp.host import write_owned
        from ndomo.plan.view import render, view_path

        text, where = render(detail)
        path = view_path(app.root, detail.slug)
        if await write_owned(self.server, path, text):
            self.view_base[path] = text
            return path, where, True
        log.warning("the open view %s refused the update; trying again", path)
        asyncio.get_running_loop().call_later(VIEW_RETRY_S, self.poke)
        return path, where, False

    def _entry(
        self, app: App, detail: PlanDetail, path: Path, where: dict[int, int], settled: bool
    ) -> _PlanEntry:
        view_uri = from_fs_path(str(path))
        diags: dict[str, list[types.Diagnostic]] = {
            view_uri: []
        }  # a view with no tasks: empty list
        tasks: dict[int, Task] = {}
        for t in detail.tasks:
            tasks[t.id] = t
            for f in t.files:
                target = Path(f) if Path(f).is_absolute() else app.root / f
                diags.setdefault(from_fs_path(str(target)), []).append(task_diagnostic(detail, t))
            diags[view_uri].append(task_diagnostic(detail, t, where[t.id]))
        return _PlanEntry(detail.updated_at, settled, tasks, diags)

    def _set(self, plan_id: str, entry: _PlanEntry | None, dirty: set[str]) -> None:
        old = self.plans.pop(plan_id, None)
        if old is not None:
            for uri in old.diags:
                dirty.add(uri)
                ids = self.by_uri.get(uri)
                if ids is not None:
                    ids.discard(plan_id)
                    if not ids:
                        del self.by_uri[uri]
        if entry is not None:
            self.plans[plan_id] = entry
            for uri in entry.diags:
                dirty.add(uri)
                self.by_uri.setdefault(uri, set()).add(plan_id)

    def _publish(self, dirty: set[str]) -> None:
        for uri in sorted(dirty):
            new = [
                d for pid in sorted(self.by_uri.get(uri, ())) for d in self.plans[pid].diags[uri]
            ]
            old = self.published.get(uri)
            if old == new or (old is None and not new):
                continue
            self.server.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri=uri, diagnostics=new)
            )
            if new:
                self.published[uri] = new
            else:
                self.published.pop(uri, None)

    async def _publish_status(self, app: App) -> None:
        """`ndomo/status` carries the session's plan progress, mode and agent: send it when one
        moved — also when another process (the CLI, a second editor) changed it."""
        from ndomo.runtime.runtime import Runtime

        rt = Runtime.of(app)
        state = await rt.session()
        status = await rt.status(state)
        key = (status.session, status.mode, status.agent, status.plan)
        first, self._status_plan, previous = self._status_plan is None, key, self._status_plan
        if key != previous and not (
            first and status.plan is None
        ):  # the start-up status went out already
            await rt.publish_status(state)

    # -- the markdown view written back ---------------------------------------------------------
    async def on_save(self, path: str, text: str) -> None:
        from ndomo.plan.view import VIEW_DIR, task_lines, wanted_changes
        from ndomo.store.errors import StoreError

        app = self.app
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
            changes = [
                (tid, st)
                for tid, st in changes
                if tid not in before or after.get(tid) != before[tid]
            ]
        for tid, status in changes:
            try:
                await store.update_task_status(tid, status, agent="user")
            except StoreError as exc:
                problems.append(exc.message)
        if problems:
            self.server.window_show_message(
                types.ShowMessageParams(
                    type=types.MessageType.Warning, message="ndomo: " + "; ".join(problems)
                )
            )
        self.poke()

    # -- quick fixes ---------------------------------------------------------------------------
    def quick_fixes(self, params: types.CodeActionParams) -> list[types.CodeAction]:
        out: list[types.CodeAction] = []
        for d in params.context.diagnostics:
            data = d.data if isinstance(d.data, dict) else None
            if d.source != DIAGNOSTIC_SOURCE or not data or "task_id" not in data:
                continue
            tid, slug = int(data["task_id"]), str(data.get("plan", ""))
            task = self.tasks.get(tid)
            desc = " ".join(task.description.split()) if task else f"task {tid}"
            ord_ = data.get("ord", "?")
            prompt = f"Do task {ord_} of plan {slug} (task id {tid}): {desc}"
            # Several tasks can mark one line: each title names its task, so the menu tells them apart.
            which = f"task {ord_} ({_short(desc)})"
            builder = pick(self.server, agent_role="builder", mode_role="build")
            run = []
            if builder is not None:  # the builder agent in the build mode (by role, not name)
                agent, mode = builder
                turn = {"prompt": prompt, "agent": agent, "mode": mode, "task_id": str(tid)}
                run.append((f"Run {which} with {agent}", command("turn"), turn))
            for title, name, args in (
                *run,
                (f"Mark {which} done", command("task.status"), {"id": tid, "status": "done"}),
                (f"Open plan {slug}", command("plan.open"), {"plan": slug}),
            ):
                if any(a.title == f"ndomo: {title}" for a in out):  # one "open plan" per plan
                    continue
                out.append(
                    types.CodeAction(
                        title=f"ndomo: {title}",
                        kind=types.CodeActionKind.QuickFix,
                        diagnostics=[d],
                        command=types.Command(title=title, command=name, arguments=[args]),
                    )
                )
        return out
