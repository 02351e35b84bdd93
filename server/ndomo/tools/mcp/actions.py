"""`ndomo mcp list | approve --name NAME [--read-only] | revoke --name NAME`."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from pydantic import ConfigDict, Field

from ndomo.actions import NoParams, action
from ndomo.errors import ActionError
from ndomo.schema import Schema
from ndomo.tools.mcp.catalog import McpCatalog
from ndomo.tools.mcp.sources import ServerSpec, approval, approve, discover, revoke

if TYPE_CHECKING:
    from ndomo.app import App


class McpServerInfo(Schema):
    name: str
    source: str
    transport: str
    runs: str  # the exact command line or URL
    approved: str  # "user config" | "approved" | "approved, read-only" | "not approved" …
    state: str  # configured | ready | failed | refused | needs approval | not started
    tools: int | None = None
    sandbox: str = ""
    error: str = ""


class McpList(Schema):
    servers: list[McpServerInfo]
    problems: list[str] = Field(default_factory=list)
    trusted: bool = True
    # the running servers' tools are deferred behind mcp_search (None: none running here)
    deferred: bool | None = None


def render_list(r: dict) -> str:
    if not r["servers"]:
        lines = ["no MCP servers configured"]
    else:
        lines = []
        for s in r["servers"]:
            tools = "" if s["tools"] is None else f", {s['tools']} tools"
            box = f", {s['sandbox']}" if s["sandbox"] else ""
            lines.append(f"{s['name']}  [{s['source']}; {s['approved']}; {s['state']}{tools}{box}]")
            lines.append(f"    {s['runs']}")
            if s["error"]:
                lines.append(f"    {s['error']}")
    if not r["trusted"]:
        lines.append(
            "(untrusted folder: its .mcp.json and .ndomo/config.yaml servers are not read)"
        )
    if r.get("deferred"):
        lines.append("tool schemas past mcp.budget_share: deferred behind mcp_search")
    lines += [f"problem: {p}" for p in r["problems"]]
    return "\n".join(lines)


def _planned_sandbox(app: App, spec: ServerSpec) -> str:
    """How a server not running in this process would run."""
    if spec.config.type == "http":
        return "remote"
    if app.settings.sandbox.mode == "off":
        return "not sandboxed (sandbox: off)"
    net = "network allowed" if spec.network else "offline"
    return f"sandboxed like bash, {net}"


async def servers_of(app: App) -> McpList:
    specs, problems = await asyncio.to_thread(discover, app)
    cat = app.existing(McpCatalog)
    if cat is not None:
        named = {s.name for s in specs}
        specs += [s for n, s in cat.client.items() if n not in named]
    out = []
    for spec in specs:
        if spec.project:
            found = await asyncio.to_thread(approval, app.root, spec)
            approved = "not approved" if found is None else "approved"
            if found is not None and found.read_only:
                approved += ", read-only"
        else:
            approved = spec.source + (", read-only" if spec.config.read_only else "")
        server = cat.servers.get(spec.name) if cat is not None else None
        conn = server.connection if server is not None else None
        out.append(
            McpServerInfo(
                name=spec.name,
                source=spec.source,
                transport=spec.config.type,
                runs=spec.shown(),
                approved=approved,
                state=server.state if server is not None else "not started",
                tools=len(server.tools) if server is not None and server.state == "ready" else None,
                sandbox=(conn.sandbox if conn is not None else "") or _planned_sandbox(app, spec),
                error=server.error if server is not None else "",
            )
        )
    deferred = cat.deferred() if cat is not None and cat.tools() else None
    return McpList(servers=out, problems=problems, trusted=app.trust.trusted, deferred=deferred)


@action(
    "mcp.list",
    NoParams,
    summary="MCP servers: source, approval, state",
    render=render_list,
    read_only=True,
)
async def mcp_list(app: App, params: NoParams) -> McpList:
    return await servers_of(app)


class ApproveParams(Schema):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, description="the server's name")
    read_only: bool = Field(
        default=False,
        description="its tools annotated readOnlyHint become read-class (offered in discussion)",
    )


class NameParams(Schema):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, description="the server's name")


class Approved(Schema):
    name: str
    runs: str
    read_only: bool = False
    done: bool = True


def _render_approved(r: dict) -> str:
    if not r["done"]:
        return f"{r['name']}: no approval to revoke"
    ro = " (read-only)" if r["read_only"] else ""
    return f"{r['name']}{ro}: {r['runs']}"


@action(
    "mcp.approve",
    ApproveParams,
    summary="Approve a project's MCP server (exactly as defined now)",
    render=_render_approved,
)
async def mcp_approve(app: App, params: ApproveParams) -> Approved:
    if not app.trust.trusted:
        raise ActionError(
            "this folder is not trusted: `ndomo trust` first, then approve its servers"
        )
    specs, _ = await asyncio.to_thread(discover, app)
    spec = next((s for s in specs if s.name == params.name), None)
    if spec is None:
        names = ", ".join(s.name for s in specs) or "none"
        raise ActionError(f"no MCP server {params.name!r} here; servers: {names}")
    if not spec.project:
        raise ActionError(
            f"{spec.name!r} is in your own config: it needs no approval (set read_only there)"
        )
    await asyncio.to_thread(approve, app.root, spec, read_only=params.read_only)
    return Approved(name=spec.name, runs=spec.shown(), read_only=params.read_only)


@action(
    "mcp.revoke",
    NameParams,
    summary="Revoke the approval of a project's MCP server",
    render=_render_approved,
)
async def mcp_revoke(app: App, params: NameParams) -> Approved:
    done = await asyncio.to_thread(revoke, app.root, params.name)
    cat = app.existing(McpCatalog)
    if cat is not None:
        await cat.drop(params.name)
    return Approved(name=params.name, runs="revoked", done=done)
