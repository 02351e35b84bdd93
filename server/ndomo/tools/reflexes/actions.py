"""`reflex.run` and `reflex.list` as actions (LSP command, CLI, slash)."""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field

from ndomo.actions import ActionError, action
from ndomo.app import App
from ndomo.runtime.context import TurnContext, TurnRequest
from ndomo.runtime.host import BaseHost
from ndomo.runtime.runtime import Runtime, TurnRefused
from ndomo.schema import Schema
from ndomo.tools.reflexes.catalog import catalog_for
from ndomo.tools.reflexes.model import ReflexProblem, ReflexRun
from ndomo.tools.reflexes.runner import run_reflex


class ReflexRunParams(Schema):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, description="Reflex name (file .ndomo/reflexes/<name>.yaml)")
    params: dict[str, Any] = Field(
        default_factory=dict, description="Values for the reflex's parameters"
    )
    session: str | None = Field(
        default=None, description="Session whose mode and agent apply (current if unset)"
    )


class ReflexListParams(Schema):
    model_config = ConfigDict(extra="forbid")


class ReflexInfo(Schema):
    name: str
    tool: str
    description: str
    source: str | None
    params: dict[str, str]
    steps: list[str]


class ReflexList(Schema):
    reflexes: list[ReflexInfo]
    problems: list[ReflexProblem]


@action(
    "reflex.list",
    ReflexListParams,
    summary="List the workspace's reflexes and any broken reflex files",
    read_only=True,
)
async def reflex_list(app: App, p: ReflexListParams) -> ReflexList:
    cat = await catalog_for(app).refresh()
    infos = [
        ReflexInfo(
            name=r.name,
            tool=r.tool_name,
            description=r.description,
            source=r.source,
            params={k: v.type for k, v in r.params.items()},
            steps=[s.tool for s in r.steps],
        )
        for r in cat.reflexes
    ]
    return ReflexList(reflexes=infos, problems=cat.problems)


@action(
    "reflex.run", ReflexRunParams, summary="Run a workspace reflex in the session's current mode"
)
async def reflex_run(app: App, p: ReflexRunParams) -> ReflexRun:
    """Steps obey the session's mode, guards and the agent's permissions; nobody answers approvals here."""
    rt = Runtime.of(app)
    cat = await catalog_for(app).refresh()
    reflex = cat.get(p.name)
    if reflex is None:
        known = ", ".join(r.name for r in cat.reflexes) or "none"
        raise ActionError(f"no reflex named {p.name!r}; reflexes: {known}", field="name")
    state = await rt.session(p.session)
    try:
        agent = await rt.check_agent(state.agent)
    except TurnRefused as exc:
        raise ActionError(str(exc), kind="failed") from None
    ctx = TurnContext(
        app=app,
        runtime=rt,
        host=BaseHost(),
        request=TurnRequest(prompt=f"/reflex run {reflex.name}"),
        session=state,
        mode=state.mode,
        agent_name=state.agent,
        agent=agent,
    )
    ctx.tools = rt.plugins.tools.filter(ctx)
    return await run_reflex(ctx, reflex, p.params)
