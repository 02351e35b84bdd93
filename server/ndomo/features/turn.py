"""Session, mode, agent and turn operations as actions (LSP command + CLI + slash)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from pydantic import ConfigDict, Field

from ndomo.actions import ActionError, NoParams, action
from ndomo.app import App
from ndomo.runtime.context import SessionState, TurnRequest
from ndomo.runtime.events import Status
from ndomo.runtime.runtime import Runtime, TurnRefused, TurnSummary
from ndomo.schema import Schema


class SessionParam(Schema):
    model_config = ConfigDict(extra="forbid")
    session: str | None = Field(default=None, description="Session id (the current one if unset).")


class ModeSetParams(SessionParam):
    mode: str = Field(description="A mode's name (see `ndomo catalog`)")


class AgentSetParams(SessionParam):
    agent: str = Field(description="An agent's name (see `ndomo catalog`)")


class ModeInfo(Schema):
    name: str
    summary: str
    iteration_cap: int


class ModeReport(Schema):
    session: str
    mode: str
    agent: str
    modes: list[ModeInfo]


async def _status(app: App, session: str | None) -> Status:
    rt = Runtime.of(app)
    return await rt.status(await rt.session(session))


@action(
    "status",
    SessionParam,
    summary="The session's mode, agent, busy state and plan progress",
    read_only=True,
)
async def status(app: App, p: SessionParam) -> Status:
    return await _status(app, p.session)


@action(
    "mode.get", SessionParam, summary="The session's mode and the modes there are", read_only=True
)
async def mode_get(app: App, p: SessionParam) -> ModeReport:
    rt = Runtime.of(app)
    state = await rt.session(p.session)
    caps = app.settings.modes.iteration_caps
    modes = [
        ModeInfo(
            name=m.name,
            summary=m.contract.summary,
            iteration_cap=caps.get(m.name, m.contract.iteration_cap),
        )
        for m in rt.plugins.modes.values()
    ]
    return ModeReport(session=state.id, mode=state.mode, agent=state.agent, modes=modes)


async def _switched(
    app: App, field: str, switch: Callable[[Runtime], Awaitable[SessionState]]
) -> Status:
    """The session's status after a switch; a refused one is the action's error on `field`."""
    rt = Runtime.of(app)
    try:
        state = await switch(rt)
    except TurnRefused as exc:
        raise ActionError(str(exc), field=field) from None
    return await rt.status(state)


@action("mode.set", ModeSetParams, summary="Switch the session's mode")
async def mode_set(app: App, p: ModeSetParams) -> Status:
    return await _switched(app, "mode", lambda rt: rt.set_mode(p.mode, p.session))


@action("agent.set", AgentSetParams, summary="Switch the session's agent (and to its default mode)")
async def agent_set(app: App, p: AgentSetParams) -> Status:
    return await _switched(app, "agent", lambda rt: rt.set_agent(p.agent, p.session))


@action("session.new", NoParams, summary="Start a new session in the default mode and agent")
async def session_new(app: App, p: NoParams) -> Status:
    rt = Runtime.of(app)
    return await rt.status(await rt.new_session())


@action(
    "turn",
    TurnRequest,
    summary="Run one turn: prompt (+ selection) → agent → answer",
    surfaces=("lsp",),
)
async def turn(app: App, p: TurnRequest) -> TurnSummary:
    from ndomo.features.mentions import MentionError, attach

    host = app.host_factory() if app.host_factory else None
    rt = Runtime.of(app)
    read = host.read_text if host is not None else None  # the editor's buffers, unsaved text too
    try:  # read before the turn: a refused mention is the request's error, nothing is sent
        attached = await attach(p.prompt, p.mentions, app.root, rt, p.session, read)
    except MentionError as exc:
        raise ActionError(str(exc), field="mentions") from None
    return await rt.run(p.attach(attached), host)


class CancelParams(SessionParam):
    pass


@action("cancel", CancelParams, summary="Cancel the running turn", surfaces=("lsp", "slash"))
async def cancel(app: App, p: CancelParams) -> dict:
    return {"cancelled": Runtime.of(app).cancel(p.session)}


class CallCancelParams(Schema):
    model_config = ConfigDict(extra="forbid")
    id: str = Field(description="Tool-call id from the turn's events")


@action(
    "toolcall.cancel",
    CallCancelParams,
    summary="Cancel one tool call; the turn goes on",
    surfaces=("lsp",),
)
async def toolcall_cancel(app: App, p: CallCancelParams) -> dict:
    return {"cancelled": Runtime.of(app).cancel_call(p.id)}
