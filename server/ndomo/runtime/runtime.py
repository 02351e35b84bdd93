"""Runtime.run: the fixed phases of a request, as explicit calls (`_steps`). Features hook
in through the phases; this file does not change when one is added.

PRE_DISPATCH → [slash dispatch] → PRE_AGENT_BUILD → [build] → POST_AGENT_BUILD →
PRE_EXECUTE → [execute] → POST_RESPONSE; FINALLY always, also after a failure or a cancel.
SKIP_AGENT skips build and execute but not POST_RESPONSE / FINALLY.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
from typing import TYPE_CHECKING, Any, TypeVar

from ndomo.app import App
from ndomo.listeners import Listeners
from ndomo.runtime import prefetch
from ndomo.runtime.context import SessionState, TurnContext, TurnRequest, TurnSummary
from ndomo.runtime.coordinator import ToolCallCoordinator
from ndomo.runtime.events import Status, TurnEvent
from ndomo.runtime.extensions import EventListeners, StatusListeners
from ndomo.runtime.history import HISTORY_KEY, read_soon
from ndomo.runtime.hooks import HookAction, Phase
from ndomo.runtime.host import BaseHost, Host
from ndomo.runtime.plugins import Plugins, default_plugins
from ndomo.runtime.slash import SlashError
from ndomo.security.paths import workspace_name

if TYPE_CHECKING:
    from ndomo.agents.loader import AgentSet
    from ndomo.agents.schema import AgentDef
    from ndomo.config import Price
    from ndomo.store.models import Session

log = logging.getLogger("ndomo.runtime")

T = TypeVar("T")


class _Go(enum.Enum):
    """What a turn does after a phase's hooks."""

    ON = "on"  # the next step
    SKIP = "skip"  # no build or execute; POST_RESPONSE and FINALLY still run
    STOP = "stop"  # a hook answered: the turn ends here (FINALLY still runs)


class TurnRefused(Exception):
    """A request the runtime refuses (unknown mode, unknown agent, busy session)."""


def usage(state: SessionState, price: Price | None) -> dict[str, Any]:
    """The `usage` of `ndomo/status`: the last turn's and the session's tokens, and their
    cost when `model.price` is set."""

    def tokens(i: int, o: int) -> dict[str, int]:
        return {"prompt": i, "completion": o}

    turn = tokens(*state.last_turn) if state.last_turn else None
    out: dict[str, Any] = {
        "turn": turn,
        "session": tokens(state.tokens_in, state.tokens_out),
        "cost": None,
    }
    if price is not None:
        out["cost"] = {
            "turn": price.cost(*state.last_turn) if state.last_turn else None,
            "session": price.cost(state.tokens_in, state.tokens_out),
            "currency": price.currency,
        }
    return out


class Runtime:
    def __init__(self, app: App, plugins: Plugins | None = None) -> None:
        self.app = app
        self.plugins = plugins or default_plugins()
        self.coordinator = ToolCallCoordinator()
        self.sessions: dict[str, SessionState] = {}
        self.current_session_id: str | None = None
        self.active: dict[str, tuple[TurnContext, asyncio.Task]] = {}  # session id → running turn
        self._releasing: dict[str, asyncio.Future] = {}  # session id → its claim's release
        # Told of every status change (the LSP sends `ndomo/status`).
        self.status_listeners: StatusListeners = Listeners("status")
        # Told of every turn event after the turn's Host (progress, plan diagnostics, autopilot).
        self.event_listeners: EventListeners = Listeners("event")
        self._session_lock = asyncio.Lock()
        self._session_stamps: dict[str, Any] = {}  # session id → store stamp when last read
        for hook in self.plugins.on_runtime:
            hook(self)

    @classmethod
    def of(cls, app: App, plugins: Plugins | None = None) -> Runtime:
        """The App's runtime, created on first use (from `plugins` if given) and closed
        with the App. The App keeps it as one of its instances: it names no Runtime."""
        return app.instance(cls, lambda: cls(app, plugins))

    def part(self, kind: type[T]) -> T:
        """This runtime's own object of class `kind` (its `Plugins`, its
        `ToolCallCoordinator`, its `ToolRegistry`): how the modules below it, which name the class but not the
        Runtime, reach it through `ctx.runtime` (`Engine`)."""
        for found in (self.plugins, self.coordinator, self.plugins.tools):
            if isinstance(found, kind):
                return found
        raise LookupError(f"a runtime holds no {kind.__name__}")

    async def aclose(self) -> None:
        """Cancel every running turn and wait for each to end; a turn that failed on its way
        out is logged. Only a cancel of `aclose` itself propagates."""
        running = {sid: task for sid, (_, task) in self.active.items()}
        for task in running.values():
            task.cancel()
        outcomes = await asyncio.gather(*running.values(), return_exceptions=True)
        for sid, outcome in zip(running, outcomes, strict=True):
            if isinstance(outcome, Exception):
                log.error("turn of session %s failed while closing", sid, exc_info=outcome)
        await asyncio.gather(*self._releasing.values(), return_exceptions=True)

    # -- sessions ---------------------------------------------------------------------

    def default_mode(self) -> str:
        """The configured default mode; one no feature registered falls back to the first
        registered mode (the catalog reports the bad setting)."""
        mode = self.app.settings.modes.default
        if mode in self.plugins.modes or not self.plugins.modes:
            return mode
        fallback = next(iter(self.plugins.modes))
        log.warning("modes.default %r is not a mode; using %r", mode, fallback)
        return fallback

    def default_agent(self) -> str:
        return self.app.settings.default_agent

    async def session(
        self, session_id: str | None = None, *, new: bool = False, claiming: bool = False
    ) -> SessionState:
        """The session's state. `claiming`: the caller claims the session next, and the
        claim reads its row (`refresh`), so a session known here is not read first."""
        async with self._session_lock:
            store = await self.app.store()
            known = session_id or (None if new else self.current_session_id)
            stamp = store.change_stamp()
            cached = self.sessions.get(known) if known else None
            if (
                known
                and cached is not None
                and (claiming or (stamp is not None and stamp == self._session_stamps.get(known)))
            ):
                return cached  # nothing committed since it was read: no query (mode.get, status …)
            if new:
                row = await store.ensure_session(None)
            elif known:
                row = await self._existing_session(store, known) or await store.ensure_session(
                    known
                )
            else:  # the workspace's latest session, with its history (a restart, a reload, `ndomo run`)
                row = await store.latest_session() or await store.ensure_session(None)
            state = self.sessions.get(row.id)
            if state is None:
                state = self.sessions[row.id] = SessionState(
                    id=row.id,
                    mode=row.mode or self.default_mode(),
                    agent=row.agent or self.default_agent(),
                )
                if hasattr(store, "session_usage"):
                    state.tokens_in, state.tokens_out = await store.session_usage(row.id)
                if not row.mode or not row.agent:
                    await store.update_session(row.id, mode=state.mode, agent=state.agent)
            else:
                self.refresh(state, row)
            if session_id is None or new:
                self.current_session_id = row.id
            # The stamp from before the read: a commit after it makes the next call re-read.
            self._session_stamps[row.id] = stamp if known == row.id else None
            return state

    @staticmethod
    def refresh(state: SessionState, row: Session) -> None:
        """Take what the stored row says: another process (the CLI) may have switched it."""
        state.mode = row.mode or state.mode
        state.agent = row.agent or state.agent
        state.committed_plan_id = row.committed_plan_id

    @staticmethod
    async def _existing_session(store: Any, session_id: str) -> Any:
        """The session's row by one read (no write transaction), or None when it is new."""
        from ndomo.store.errors import StoreError

        try:
            return await store.get_session(session_id)
        except StoreError:  # missing (or a bad id: ensure_session reports that clearly)
            return None

    def check_mode(self, mode: str) -> None:
        if mode not in self.plugins.modes:
            raise TurnRefused(
                f"unknown mode {mode!r}; modes: {', '.join(sorted(self.plugins.modes))}"
            )

    async def check_agent(self, agent: str) -> AgentDef:
        agents = await self.agents()
        found = agents.get(agent)
        if found is None:  # an agent file written since they were loaded: read them again
            self.app.forget_agents()
            agents = await self.agents()
            found = agents.get(agent)
        if found is None:
            raise TurnRefused(
                f"unknown agent {agent!r}; agents: {', '.join(sorted(agents.agents))}"
            )
        return found

    async def agents(self) -> AgentSet:
        return await self.app.load_agents(self.plugins.modes)

    async def set_mode(self, mode: str, session_id: str | None = None) -> SessionState:
        self.check_mode(mode)
        state = await self.session(session_id)
        store = await self.app.store()
        await store.update_session(state.id, mode=mode)
        state.mode = mode
        await self.publish_status(state)
        return state

    async def set_agent(self, agent: str, session_id: str | None = None) -> SessionState:
        definition = await self.check_agent(agent)
        state = await self.session(session_id)
        mode = definition.default_mode or state.mode
        self.check_mode(mode)
        store = await self.app.store()
        await store.update_session(state.id, agent=agent, mode=mode)
        state.agent, state.mode = agent, mode
        await self.publish_status(state)
        return state

    async def open_session(self, session_id: str) -> SessionState:
        """Make `session_id` this runtime's current session and the workspace's latest."""
        state = await self.session(session_id)
        self.current_session_id = state.id
        await (await self.app.store()).touch_session(state.id)
        await self.publish_status(state)
        return state

    async def new_session(self) -> SessionState:
        previous = self.current_session_id
        state = await self.session(new=True)
        if previous and previous != state.id:
            await self.plugins.on_session_end.notify(self, previous)
        await self.publish_status(state)
        return state

    async def status(self, state: SessionState) -> Status:
        plan = None
        if state.committed_plan_id:
            try:
                store = await self.app.store()
                detail = await store.get_plan(state.committed_plan_id)
                plan = {
                    "id": detail.id,
                    "slug": detail.slug,
                    "status": detail.status,
                    "done": detail.progress.done,
                    "total": detail.progress.total,
                }
            except Exception:  # noqa: BLE001 - a deleted plan must not break the status bar
                log.debug("plan status unavailable", exc_info=True)
        return Status(
            session=state.id,
            mode=state.mode,
            agent=state.agent,
            busy=state.busy,
            state=state.last_outcome,
            plan=plan,
            usage=usage(state, self.app.settings.model.price),
            auto_allow=self.app.settings.sandbox.auto_allow,
        )

    async def publish_status(self, state: SessionState) -> None:
        await self.status_listeners.notify(await self.status(state))

    async def emit(self, ctx: TurnContext, event: TurnEvent) -> None:
        event.turn_id = event.turn_id or ctx.turn_id or None
        try:
            await ctx.host.emit(event)
        except Exception:  # noqa: BLE001 - a host that cannot show an event must not stop the turn
            log.exception("host failed to take an event")
        await self.event_listeners.notify(ctx, event)

    # -- turns ------------------------------------------------------------------------

    async def run(
        self,
        request: TurnRequest,
        host: Host | None = None,
        *,
        parent: TurnContext | None = None,
    ) -> TurnSummary:
        host = host or (parent.host if parent else BaseHost())
        if parent is not None:
            state = parent.session
        else:
            self.app.prefetch_agents(self.plugins.modes)  # read while the session is claimed
            state = await self.session(request.session, claiming=True)
        if parent is None and state.id in self.active:
            return TurnSummary(
                turn_id=None,
                session=state.id,
                agent=request.agent or state.agent,
                mode=request.mode or state.mode,
                status="failed",
                error="a turn is already running in this session; cancel it first (ndomo.cancel)",
            )
        history: asyncio.Future | None = None  # the history's read, started behind the claim
        if parent is None:  # one turn per session across processes too (another editor, the CLI)
            from ndomo.store.messages import SessionBusy

            releasing = self._releasing.get(state.id)
            if releasing is not None:  # the session's last turn here, still letting go
                await asyncio.shield(releasing)

            store = await self.app.store()
            # The claim reads the session's row in its own transaction (one hop, not two);
            # the history's read is queued right behind it (history.read_soon).
            claim = asyncio.ensure_future(store.claim_session(state.id))
            history = read_soon(self.app, state.id)
            try:
                self.refresh(state, await asyncio.shield(claim))
            except asyncio.CancelledError:
                # The claim is made on the store's thread whatever the cancel: once it is,
                # let it go, or the session stays busy for as long as this process runs.
                with contextlib.suppress(Exception):
                    await claim
                    await asyncio.shield(self._release(state.id))
                with contextlib.suppress(BaseException):
                    await history  # a read, dropped; it does not outlive the turn
                raise
            except SessionBusy as exc:
                await asyncio.gather(history, return_exceptions=True)  # another's: dropped
                return TurnSummary(
                    turn_id=None,
                    session=state.id,
                    agent=request.agent or state.agent,
                    mode=request.mode or state.mode,
                    status="failed",
                    error=exc.message,
                )
        mode = request.mode or (parent.mode if parent else state.mode)
        agent = request.agent or state.agent
        try:
            self.check_mode(mode)
            if parent is None:  # a user's typo is an answer, not a failed turn with a traceback
                await self.check_agent(agent)
        except TurnRefused as exc:
            if history is not None:
                await asyncio.gather(history, return_exceptions=True)
            if parent is None:
                await asyncio.shield(self._release(state.id))
            return TurnSummary(
                turn_id=None,
                session=state.id,
                agent=agent,
                mode=mode,
                status="failed",
                error=str(exc),
            )
        ctx = TurnContext(
            app=self.app,
            runtime=self,
            host=host,
            request=request,
            session=state,
            mode=mode,
            agent_name=agent,
            parent_turn_id=parent.turn_id if parent else None,
            parent=parent,
            depth=(parent.depth + 1) if parent else 0,
        )
        if history is not None:
            prefetch.adopt(ctx, HISTORY_KEY, history)
        task = asyncio.create_task(self._run(ctx))
        if parent is None:
            self.active[state.id] = (ctx, task)
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            task.cancel()
            (outcome,) = await asyncio.gather(task, return_exceptions=True)
            if isinstance(outcome, Exception):
                log.error("turn of session %s failed while cancelled", state.id, exc_info=outcome)
            raise
        finally:
            if parent is None:
                self.active.pop(state.id, None)
                self._release_soon(state.id)
                # one step of the loop: the release's job is queued on the store's thread
                # before any the caller queues next (it reads no claim of this turn's)
                await asyncio.sleep(0)

    def _release_soon(self, session_id: str) -> None:
        """The turn's claim, dropped on the store's thread next: its result does not wait for
        the row's delete (~1-1.5 ms here, the loop's wake-up included). This process's next
        turn in the session waits for it (`run`), as does `aclose`; `run` returns once its
        job is queued, and the store's thread runs jobs in order, so nothing this process
        asks the store afterwards sees the claim."""
        release = asyncio.ensure_future(self._release(session_id))
        self._releasing[session_id] = release

        def done(_: asyncio.Future) -> None:
            if self._releasing.get(session_id) is release:
                del self._releasing[session_id]

        release.add_done_callback(done)

    async def _release(self, session_id: str) -> None:
        try:
            await (await self.app.store()).release_session(session_id)
        except Exception:  # noqa: BLE001 - a claim left behind is taken over once this process is gone
            log.exception("could not release session %s", session_id)

    def cancel(self, session_id: str | None = None) -> bool:
        sid = session_id or self.current_session_id
        entry = self.active.get(sid) if sid else None
        if entry is None:
            return False
        ctx, task = entry
        ctx.cancelled.set()
        task.cancel()
        return True

    def cancel_call(self, call_id: str) -> bool:
        return self.coordinator.cancel(call_id)

    async def _run(self, ctx: TurnContext) -> TurnSummary:
        """One turn: busy on, the steps, the error or cancel, FINALLY hooks, busy off."""
        top = ctx.depth == 0
        busy: asyncio.Future | None = None
        if top:
            ctx.session.busy = True
            # Told while the turn is set up (not before: the first token would wait for it),
            # and before any of the turn's content: an editor that sees the turn's text sees
            # it busy. The end's status waits for it, so the two arrive in order.
            busy = asyncio.ensure_future(self.publish_status(ctx.session))
        try:
            await self._steps(ctx)
        except asyncio.CancelledError:
            ctx.status = "cancelled"
            ctx.error = ctx.error or "cancelled by the user"
            if ctx.turn_id is not None:
                self.coordinator.cancel_turn(ctx.turn_id)
        except Exception as exc:  # noqa: BLE001 - the turn's boundary: any failure is the turn's answer
            log.exception("turn failed")
            ctx.status = "failed"
            ctx.error = ctx.error or f"{type(exc).__name__}: {exc}"
        finally:
            ctx.answering.set()  # no model event will come now: nothing waits for one
            await self._finally(ctx)
            try:
                await asyncio.shield(prefetch.settle(ctx))
            except asyncio.CancelledError:
                log.warning("a cancel arrived while the turn's started reads ended")
            if ctx.turn_id is not None:
                self.coordinator.forget_turn(ctx.turn_id)
            if top:
                if busy is not None:
                    await asyncio.shield(busy)
                ctx.session.busy = False
                ctx.session.tokens_in += ctx.tokens_in
                ctx.session.tokens_out += ctx.tokens_out
                ctx.session.last_turn = (ctx.tokens_in, ctx.tokens_out)
                if ctx.turn_id:
                    ctx.session.last_outcome = self.final_state(ctx)
                await self.publish_status(ctx.session)
        return self._summary(ctx)

    async def _steps(self, ctx: TurnContext) -> None:
        """The turn top to bottom: each core step (slash dispatch, build, execute) after
        its phase's hooks. A hook's SHORT_CIRCUIT ends the turn there with its payload; its
        SKIP_AGENT (or a handled slash command) skips the rest up to POST_RESPONSE."""
        go = await self._phase(Phase.PRE_DISPATCH, ctx, done_on_stop=True)
        if go is _Go.STOP:
            return
        if go is _Go.ON and await self._dispatch(ctx):
            go = _Go.SKIP
        if go is _Go.ON:
            go = await self._phase(Phase.PRE_AGENT_BUILD, ctx)
        if go is _Go.ON:
            await self._build(ctx)
            go = await self._phase(Phase.POST_AGENT_BUILD, ctx)
        if go is _Go.ON:
            go = await self._phase(Phase.PRE_EXECUTE, ctx)
        if go is _Go.ON:
            await self._execute(ctx)
        if go is _Go.STOP:
            return
        if ctx.status == "running":
            ctx.status = "done"
        await self.plugins.hooks.run_phase(Phase.POST_RESPONSE, ctx)

    async def _phase(self, phase: Phase, ctx: TurnContext, *, done_on_stop: bool = False) -> _Go:
        """Run one phase's hooks; what the turn does next. A short-circuit's payload is the
        turn's; its status is "done" (before dispatch always, later unless a hook set one)."""
        result = await self.plugins.hooks.run_phase(phase, ctx)
        if result.action is HookAction.SHORT_CIRCUIT:
            ctx.payload = result.payload
            if done_on_stop or ctx.status == "running":
                ctx.status = "done"
            return _Go.STOP
        return _Go.SKIP if result.action is HookAction.SKIP_AGENT else _Go.ON

    async def _finally(self, ctx: TurnContext) -> None:
        """FINALLY hooks, each shielded from a cancel and run even when another fails."""
        for hook in self.plugins.hooks.ordered(Phase.FINALLY):
            if hook.applies(ctx):
                try:
                    await asyncio.shield(hook.run(ctx))
                except asyncio.CancelledError:
                    log.warning("FINALLY hook %s was cancelled", hook.name)
                except Exception:  # noqa: BLE001 - every FINALLY hook runs, whatever another raised
                    log.exception("FINALLY hook %s failed", hook.name)

    @staticmethod
    def final_state(ctx: TurnContext) -> str:
        """The status `state` once a turn ended: cleared, unless the user must know something —
        a hand-back (never a silent stop) or a failure. A feature may name its own."""
        if ctx.final_state:
            return ctx.final_state
        if ctx.status == "blocked":
            reason = " ".join((ctx.handback or "blocked").split())
            return f"{ctx.agent_name} handed back: {reason[:80]}"
        if ctx.status == "failed":
            return f"{ctx.agent_name}: the last turn failed"
        return ""

    async def _dispatch(self, ctx: TurnContext) -> bool:
        try:
            handled, payload = await self.plugins.slash.dispatch(ctx, ctx.request.prompt.strip())
        except SlashError as exc:
            ctx.status, ctx.error = "failed", str(exc)
            return True
        if handled:
            ctx.payload, ctx.status = payload, "done"
        return handled

    async def _build(self, ctx: TurnContext) -> None:
        from ndomo.runtime.builder import build_turn

        await build_turn(ctx)

    async def _execute(self, ctx: TurnContext) -> None:
        from ndomo.runtime.executor import execute

        await execute(ctx)

    def _summary(self, ctx: TurnContext) -> TurnSummary:
        modified = [workspace_name(p, ctx.roots) for p in ctx.modified]
        return TurnSummary(
            turn_id=ctx.turn_id,
            session=ctx.session.id,
            agent=ctx.agent_name,
            mode=ctx.mode,
            status=ctx.status,
            answer=ctx.answer,
            error=ctx.error,
            handback=ctx.handback,
            iterations=ctx.iterations,
            tokens_in=ctx.tokens_in,
            tokens_out=ctx.tokens_out,
            modified=modified,
            payload=ctx.payload,
        )
