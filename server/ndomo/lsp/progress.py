"""Each editor-started turn is a cancellable work-done progress (and, with `open_transcript`,
the session's markdown export is shown after it).

Driven by runtime events (not the host) so the plan's progress can be read from the
turn's context. Cancelling the progress in the editor cancels the turn.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, cast

from lsprotocol import types

from ndomo.lsp.server import Feature

if TYPE_CHECKING:  # the runtime loads after `initialized`, not before initialize
    from ndomo.app import App
    from ndomo.lsp.host import LspHost
    from ndomo.runtime.context import TurnContext
    from ndomo.runtime.events import TurnEvent, TurnFinished

log = logging.getLogger("ndomo.lsp")


@dataclass
class _Open:
    token: str
    session: str
    title: str
    app: App  # the folder whose runtime runs the turn


@dataclass
class _OnHost:
    """The progress of the turn an LspHost serves (its sub-agents' turns share the host)."""

    starting: asyncio.Future | None = None  # the token's round trip, not awaited by the turn
    open: _Open | None = None


class TurnProgressFeature(Feature):
    name = "progress"

    def __init__(self, server) -> None:
        super().__init__(server)
        self.by_token: dict[str, _Open] = {}  # open progresses → the session to cancel
        self.on_host: weakref.WeakKeyDictionary[LspHost, _OnHost] = weakref.WeakKeyDictionary()

    def register(self) -> None:
        ls = self.server

        @ls.feature(types.WINDOW_WORK_DONE_PROGRESS_CANCEL)
        async def on_cancel(params: types.WorkDoneProgressCancelParams) -> None:
            entry = self.by_token.get(str(params.token))
            if entry is None:
                return
            log.info(
                "progress %s cancelled by the client: cancelling session %s",
                entry.token,
                entry.session,
            )
            from ndomo.runtime.runtime import Runtime

            Runtime.of(entry.app).cancel(entry.session)

    async def on_ready(self, app: App) -> None:
        from ndomo.runtime.runtime import Runtime

        Runtime.of(app).event_listeners.add(self.on_event)

    # -- capabilities ------------------------------------------------------------------------
    def _window_caps(self):
        caps = self.server.client_capabilities
        return caps.window if caps else None

    def supports_progress(self) -> bool:
        w = self._window_caps()
        return bool(w and w.work_done_progress)

    def supports_show_document(self) -> bool:
        w = self._window_caps()
        return bool(w and w.show_document and w.show_document.support)

    # -- events ------------------------------------------------------------------------------
    async def on_event(self, ctx: TurnContext, event: TurnEvent) -> None:
        from ndomo.lsp.host import LspHost

        host = ctx.host
        if not isinstance(host, LspHost):
            return
        top = ctx.depth == 0
        state = self.on_host.setdefault(host, _OnHost())
        if event.kind == "turn_started" and top:
            # The token is a round trip to the editor: the turn (and its first token) does not
            # wait for it, and it starts behind the first token (or 50 ms in). Reports before it
            # exists are skipped; the end waits for it.
            state.starting = asyncio.ensure_future(self._begin(ctx, host))
            return
        starting = state.starting
        if event.kind == "turn_finished" and top and starting is not None:
            state.starting = None
            await starting
        if (
            event.kind == "turn_finished"
            and top
            and ctx.app.settings.open_transcript
            and self.supports_show_document()
        ):
            try:  # before the turn's result goes back, so the editor shows the export with it
                await asyncio.wait_for(self._show_export(ctx, host), 10)
            except Exception:  # noqa: BLE001 - the export is a courtesy; the turn's result goes back anyway
                log.warning("the session export could not be shown", exc_info=True)
        entry = state.open
        if entry is None:
            return
        wdp = self.server.work_done_progress
        if event.kind == "tool_started":
            who = "" if top else f"{ctx.agent_name}: "
            message, percent = await self._message(ctx, f"{who}{event.name}")  # type: ignore[attr-defined]  # kind "tool_started" is a ToolStarted (events load with the App)
            wdp.report(
                entry.token,
                types.WorkDoneProgressReport(message=message, percentage=percent, cancellable=True),
            )
        elif event.kind in ("tool_finished", "plan_changed") and top:
            message, percent = await self._message(ctx, "thinking")
            wdp.report(
                entry.token,
                types.WorkDoneProgressReport(message=message, percentage=percent, cancellable=True),
            )
        elif event.kind == "turn_finished" and top:
            # by its kind (the events module loads with the App, after `initialized`)
            done = cast("TurnFinished", event)
            state.open = None
            self.by_token.pop(entry.token, None)
            err = done.error
            wdp.end(
                entry.token,
                types.WorkDoneProgressEnd(message=f"{done.status}" + (f": {err}" if err else "")),
            )

    async def _show_export(self, ctx: TurnContext, host: LspHost) -> None:
        """`open_transcript`: the session's markdown export, refreshed and shown after each turn."""
        from ndomo.features.sessions import ExportParams, session_export

        done = await session_export(ctx.app, ExportParams(session=ctx.session.id))
        await host.show_document(Path(done.path))

    async def _begin(self, ctx: TurnContext, host: LspHost) -> None:
        await ctx.first_event()  # a round trip to the editor: behind the first token
        state = self.on_host.setdefault(host, _OnHost())
        if not self.supports_progress() or state.open is not None:
            return
        token = f"ndomo-turn-{uuid.uuid4().hex[:12]}"
        try:
            await self.server.work_done_progress.create_async(token)
        except Exception:  # noqa: BLE001 - a client without a token gets no progress
            log.debug("client refused progress token", exc_info=True)
            return
        entry = _Open(
            token=token,
            session=ctx.session.id,
            title=f"{ctx.agent_name} · {ctx.mode}",
            app=ctx.app,
        )
        state.open = entry
        self.by_token[token] = entry
        message, percent = await self._message(ctx, ctx.request.prompt.splitlines()[0][:80])
        self.server.work_done_progress.begin(
            token,
            types.WorkDoneProgressBegin(
                title=entry.title, message=message, percentage=percent, cancellable=True
            ),
        )

    async def _message(self, ctx: TurnContext, what: str) -> tuple[str, int | None]:
        plan = await _plan_progress(ctx)
        if plan is None:
            return what, None
        done, total, percent = plan
        return f"{what} · plan {done}/{total}", percent


async def _plan_progress(ctx: TurnContext) -> tuple[int, int, int] | None:
    """done/total of the plan this turn works on: the session's committed plan, else the task's."""
    try:
        store = await ctx.app.store()
        plan_id = ctx.session.committed_plan_id
        if plan_id is None and ctx.request.task_id:
            plan_id = (await store.get_task(int(ctx.request.task_id.lstrip("#")))).plan_id
        if plan_id is None:
            return None
        p = await store.plan_progress(plan_id)
        return p.done, p.total, p.percent
    except Exception:  # noqa: BLE001 - a missing plan or task must not break the turn's progress
        log.debug("plan progress unavailable", exc_info=True)
        return None
