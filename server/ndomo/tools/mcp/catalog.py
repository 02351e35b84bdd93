"""The workspace's MCP servers as tools: `mcp__<server>__<tool>`, each in the class the
fence judges, its JSON schema offered as the server gave it.

A per-App catalog holds one `Connection` per server. Servers start with the session's
first turn (a hook before the agent's tools are chosen), concurrently; their tool lists
and prompt lists are cached per connection and listed again when the server restarts (after
a crash, a timeout, or a changed definition — the catalog compares each definition's
fingerprint before every turn), and when the server sends `notifications/tools/list_changed`
or `notifications/prompts/list_changed` (listed again before the next turn). `started`
starts one server outside a turn (an `@server:uri` mention) without asking anything: a
project's server must be approved already. A project's server is started only once the user approved that exact
definition (asked in the turn, `ndomo run --yes` approves it for the run, `ndomo mcp
approve --name NAME` ahead of time).
"""

from __future__ import annotations

import asyncio
import fnmatch
import json
import logging
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ndomo.config import McpServerConfig
from ndomo.runtime.context import TurnContext
from ndomo.runtime.host import ApprovalRequest
from ndomo.runtime.tools import Risk, ToolDescriptor, ToolError, ToolKind, ToolResult, admits
from ndomo.schema import Schema
from ndomo.tools.mcp.basics import PREFIX, configured
from ndomo.tools.mcp.client import Connection, McpCallError, McpRefused
from ndomo.tools.mcp.sources import CLIENT, ServerSpec, approval, approve, discover

if TYPE_CHECKING:
    from mcp import types

    from ndomo.app import App

log = logging.getLogger("ndomo.mcp")

SEARCH = "mcp_search"
# OpenAI-compatible tool names: letters, digits, '_' and '-', at most 64
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
DEFAULT_WINDOW = 32_768  # tokens, when the model's context window is not known
CHARS_PER_TOKEN = 4


class McpUnavailable(Exception):
    """A server asked for outside a turn that is not configured, approved or running."""


def tool_name(server: str, tool: str) -> str:
    return f"{PREFIX}{server}__{_UNSAFE.sub('_', tool)}"[:64]


class McpArgs(BaseModel):
    """A call's arguments, checked against the server's own JSON schema."""

    model_config = ConfigDict(extra="allow")
    json_validator: ClassVar[Any] = None

    @model_validator(mode="before")
    @classmethod
    def _by_schema(cls, data: Any) -> Any:
        if cls.json_validator is not None:
            errors = sorted(cls.json_validator.iter_errors(data), key=lambda e: list(e.path))
            if errors:
                raise ValueError(
                    "; ".join(
                        f"{'/'.join(map(str, e.path)) or 'arguments'}: {e.message}"
                        for e in errors[:3]
                    )
                )
        return data


def _args_model(name: str, schema: dict[str, Any]) -> type[McpArgs]:
    from jsonschema import exceptions, validators  # type: ignore[import-untyped]

    checker = None
    try:
        kind = validators.validator_for(schema)
        kind.check_schema(schema)
        checker = kind(schema)
    except (exceptions.SchemaError, TypeError):
        log.warning("MCP tool %s has an invalid input schema: arguments go unchecked", name)
    return type(f"Args_{name}", (McpArgs,), {"json_validator": checker})


@dataclass(frozen=True)
class McpTool(ToolDescriptor):
    """A tool of an MCP server; its schema is offered as the server wrote it."""

    input_schema: dict[str, Any] = field(default_factory=dict)
    server: str = ""

    def schema(self) -> dict[str, Any]:
        return self.input_schema


def tool_kind(spec: ServerSpec, tool: types.Tool, read_only: bool) -> ToolKind:
    """The fence's class for one tool, decided here, in code: `network` when the server
    reaches the network; `read` only when the tool says readOnlyHint *and* the user
    approved the server as read-only; otherwise `external` (changes ndomo cannot see:
    autopilot only)."""
    if spec.network:
        return "network"
    hint = tool.annotations is not None and tool.annotations.read_only_hint is True
    return "read" if hint and read_only else "external"


def describe(spec: ServerSpec, tool: types.Tool) -> str:
    text = (tool.description or tool.title or tool.name).strip()
    return f"{text} (MCP server '{spec.name}')"


def render_result(result: types.CallToolResult, cap: int) -> tuple[str, int]:
    """The result as text for the model, and how many characters were cut."""
    parts: list[str] = []
    for item in result.content:
        kind = getattr(item, "type", "")
        if kind == "text":
            parts.append(item.text)  # type: ignore[union-attr]
        elif kind == "resource":
            res = item.resource  # type: ignore[union-attr]
            parts.append(getattr(res, "text", None) or f"[resource {res.uri}]")
        elif kind == "resource_link":
            parts.append(f"[resource {item.uri}]")  # type: ignore[union-attr]
        else:
            parts.append(f"[{kind or 'content'} not shown]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    text = "\n".join(parts)
    if len(text) <= cap:
        return text, 0
    return text[:cap], len(text) - cap


@dataclass
class Server:
    spec: ServerSpec
    connection: Connection | None = None
    state: str = "configured"  # configured | needs approval | refused | ...connection states
    read_only: bool = False
    tools: list[McpTool] = field(default_factory=list)
    error: str = ""
    saved: bool = False  # runs on a saved approval (re-checked each turn: a revoke stops it)

    @property
    def prompts(self) -> list[types.Prompt]:
        """Its prompts as last listed (at its last start, or after list_changed)."""
        return list(self.connection.prompts) if self.connection is not None else []


class McpCatalog:
    def __init__(self, app: App) -> None:
        self.app = app
        self.servers: dict[str, Server] = {}
        self.problems: list[str] = []
        # servers the editor passes for its session (the user's authority, like the user's
        # config; a configured server of the same name wins): `add_client_servers`
        self.client: dict[str, ServerSpec] = {}
        self._lock = asyncio.Lock()

    def add_client_servers(self, servers: dict[str, McpServerConfig]) -> None:
        """Servers an editor gives for this session (ACP `session/new` `mcpServers`);
        started with the next turn."""
        for name, config in servers.items():
            self.client[name] = ServerSpec(name, CLIENT, config)

    # -- the turn ---------------------------------------------------------------------

    async def refresh(self, ctx: TurnContext) -> None:
        """Definitions re-read, new or changed servers approved and started (concurrently)."""
        async with self._lock:
            specs, self.problems = await asyncio.to_thread(discover, self.app)
            named = {s.name for s in specs}
            specs += [s for n, s in self.client.items() if n not in named]
            seen = {s.name for s in specs}
            for name in [n for n in self.servers if n not in seen]:
                await self.drop(name)
            starting = []
            for spec in specs:
                known = self.servers.get(spec.name)
                if (
                    known is not None
                    and known.saved
                    and await asyncio.to_thread(approval, self.app.root, spec) is None
                ):
                    # revoked meanwhile (`ndomo mcp revoke`, perhaps in another process):
                    # stopped now, and asked about again like a new server
                    await self.drop(spec.name)
                    known = None
                if known is not None and known.spec.fingerprint() == spec.fingerprint():
                    if known.spec.source != spec.source:
                        await self.drop(spec.name)
                    elif known.state == "ready" and known.connection and known.connection.changed:
                        await known.connection.relist()
                        conn = known.connection
                        known.tools = [self._descriptor(known, t) for t in _kept(known, conn.tools)]
                        continue
                    elif known.state == "ready":
                        continue
                    elif known.state == "refused":
                        # not asked again in this process; approved meanwhile (`ndomo mcp
                        # approve` elsewhere): started now
                        found = await asyncio.to_thread(approval, self.app.root, spec)
                        if found is None:
                            continue
                        known.read_only, known.saved = found.read_only, True
                        starting.append(self._start(known))
                        continue
                    elif known.connection is not None and known.tools:
                        continue  # failed after it started: restarted by its next call
                elif known is not None:
                    await self.drop(spec.name)
                server = self.servers.setdefault(spec.name, Server(spec))
                if not await self._approved(ctx, server):
                    continue
                starting.append(self._start(server))
            if starting:
                await asyncio.gather(*starting)

    async def _approved(self, ctx: TurnContext, server: Server) -> bool:
        spec = server.spec
        if not spec.project:
            server.read_only = spec.config.read_only
            return True
        found = await asyncio.to_thread(approval, self.app.root, spec)
        if found is not None:
            server.read_only, server.saved = found.read_only, True
            return True
        request = ApprovalRequest(
            permission="mcp_server",
            subject=spec.shown(),
            agent=ctx.agent_name,
            mode=ctx.mode,
            reason=f"start the project's MCP server '{spec.name}' (from {spec.source})",
            network=spec.network,
            sandbox="remote" if spec.config.type == "http" else "sandboxed like bash",
        )
        try:
            answer = await ctx.host.approve(request)
        except Exception:  # noqa: BLE001 - a question that cannot be asked is a no: the server stays off
            log.exception("could not ask to start MCP server %s", spec.name)
            answer = "deny"
        if answer in ("session", "project"):
            await asyncio.to_thread(approve, self.app.root, spec)
            server.saved = True
        if answer in ("once", "session", "project"):
            server.read_only = False  # read-only is given with `ndomo mcp approve --read-only`
            return True
        server.state = "refused"
        server.error = "not approved: `ndomo mcp approve --name " + spec.name + "`"
        return False

    async def _start(self, server: Server) -> None:
        if server.connection is None:
            server.connection = Connection(server.spec, self.app.settings, self.app.root)
        try:
            await server.connection.ensure()
        except McpCallError as exc:
            server.state, server.error = "failed", str(exc)
            return
        server.state, server.error = "ready", ""
        server.tools = [self._descriptor(server, t) for t in _kept(server, server.connection.tools)]

    async def started(self, name: str) -> Server:
        """The server `name` running, started now if need be, outside a turn: nothing is
        asked, so a project's server starts only if its definition is approved already."""
        async with self._lock:
            specs, self.problems = await asyncio.to_thread(discover, self.app)
            named = {s.name: s for s in specs}
            for n, s in self.client.items():
                named.setdefault(n, s)
            spec = named.get(name)
            if spec is None:
                known = ", ".join(sorted(named)) or "none"
                raise McpUnavailable(f"no MCP server named '{name}' (configured: {known})")
            server = self.servers.get(name)
            if server is not None and server.spec.fingerprint() != spec.fingerprint():
                await self.drop(name)
                server = None
            if server is None:
                server = self.servers[name] = Server(spec)
            if server.state == "ready" and server.connection is not None:
                conn = server.connection
                if conn.changed:
                    await conn.relist()
                    server.tools = [self._descriptor(server, t) for t in _kept(server, conn.tools)]
                return server
            if spec.project:
                found = await asyncio.to_thread(approval, self.app.root, spec)
                if found is None:
                    raise McpUnavailable(
                        f"the project's MCP server '{name}' is not approved: "
                        f"`ndomo mcp approve --name {name}`"
                    )
                server.read_only = found.read_only
            else:
                server.read_only = spec.config.read_only
            await self._start(server)
            if server.state != "ready":
                raise McpUnavailable(server.error or f"MCP server '{name}' did not start")
            return server

    async def start_all(self) -> None:
        """Every server that starts without asking, started (outside a turn); one that
        cannot start stays off, the others start."""
        specs, _ = await asyncio.to_thread(discover, self.app)
        for name in sorted({s.name for s in specs} | set(self.client)):
            try:
                await self.started(name)
            except McpUnavailable as exc:
                log.info("MCP server %s not started: %s", name, exc)

    def owner(self, uri: str) -> Server | None:
        """The running server that lists the resource `uri`."""
        for name in sorted(self.servers):
            server = self.ready(name)
            conn = server.connection if server is not None else None
            if conn is not None and any(str(r.uri) == uri for r in conn.resources):
                return server
        return None

    def ready(self, name: str) -> Server | None:
        """The server `name` if it runs (or failed after it started: the next request
        restarts it)."""
        server = self.servers.get(name)
        if server is None or server.connection is None or server.state not in ("ready", "failed"):
            return None
        return server

    def _descriptor(self, server: Server, tool: types.Tool) -> McpTool:
        spec = server.spec
        name = tool_name(spec.name, tool.name)
        remote = tool.name
        catalog = self

        async def run(ctx: TurnContext, params: BaseModel) -> ToolResult:
            return await catalog.call(server, remote, params.model_dump())

        kind = tool_kind(spec, tool, server.read_only)
        risk: Risk = "read" if kind == "read" else "network" if kind == "network" else "exec"
        return McpTool(
            name=name,
            description=describe(spec, tool),
            params=_args_model(name, tool.input_schema),
            run=run,
            risk=risk,
            permission="mcp",
            kind=kind,
            input_schema=tool.input_schema,
            server=spec.name,
        )

    async def call(self, server: Server, tool: str, arguments: dict[str, Any]) -> ToolResult:
        conn = server.connection
        if conn is None:
            raise ToolError(f"MCP server '{server.spec.name}' is not running")
        try:
            result = await conn.call(tool, arguments)
        except McpCallError as exc:
            if not isinstance(exc, McpRefused):
                server.state, server.error = "failed", str(exc)
            raise ToolError(str(exc)) from None
        server.state = "ready"
        cap = self.app.settings.mcp.output_cap
        text, cut = render_result(result, cap)
        if cut:
            text += f"\n(output truncated: {cut} characters after the first {cap} not shown)"
        data = {"server": server.spec.name, "tool": tool, "sandbox": conn.sandbox}
        if result.is_error:
            return ToolResult(ok=False, content=text, status="failed", data=data)
        return ToolResult(content=text, data=data)

    # -- what the model is offered -----------------------------------------------------

    def tools(self) -> list[McpTool]:
        # a server that failed after it started keeps its tools: the next call restarts it
        return [
            t
            for s in self.servers.values()
            if s.state in ("ready", "failed") and s.connection is not None
            for t in s.tools
        ]

    def schema_chars(self) -> int:
        return sum(len(t.description) + len(json.dumps(t.input_schema)) for t in self.tools())

    def deferred(self) -> bool:
        """Would the schemas take more than `mcp.budget_share` of the context window?"""
        window = self.app.settings.model.context_window or DEFAULT_WINDOW
        limit = window * CHARS_PER_TOKEN * self.app.settings.mcp.budget_share
        return self.schema_chars() > limit

    async def drop(self, name: str) -> None:
        """Stop and forget a server (revoked, removed from the config)."""
        server = self.servers.pop(name, None)
        if server is not None and server.connection is not None:
            await server.connection.stop()

    async def aclose(self) -> None:
        for name in list(self.servers):
            await self.drop(name)


def _kept(server: Server, tools: list[types.Tool]) -> list[types.Tool]:
    """The tools its definition's `tools` list keeps (all when unset)."""
    wanted = server.spec.config.tools
    if wanted is None:
        return list(tools)
    return [t for t in tools if any(fnmatch.fnmatchcase(t.name, p) for p in wanted)]


def catalog_for(app: App) -> McpCatalog:
    return app.instance(McpCatalog, lambda: McpCatalog(app))


@dataclass
class _Found:
    """The tools `mcp_search` found in this turn: callable for the rest of it."""

    names: set[str] = field(default_factory=set)


def provide(ctx: TurnContext) -> list[ToolDescriptor]:
    cat = ctx.app.existing(McpCatalog)
    if cat is None:
        return []
    tools = cat.tools()
    if not tools or not cat.deferred():
        return list(tools)
    found = ctx.existing(_Found)
    shown = [t for t in tools if found is not None and t.name in found.names]
    return [SEARCH_TOOL, *shown]


class SearchParams(Schema):
    model_config = ConfigDict(extra="forbid")
    query: str = Field(min_length=1, description="words of the tool's name or description")


async def _search(ctx: TurnContext, p: SearchParams) -> ToolResult:
    cat = ctx.app.existing(McpCatalog)
    tools = cat.tools() if cat is not None else []
    words = [w.lower() for w in p.query.split()]
    scored = []
    for t in tools:
        if not admits(ctx, t):
            continue  # only what this mode could call
        hay = f"{t.name} {t.description}".lower()
        score = sum(1 for w in words if w in hay)
        if score:
            scored.append((-score, t.name, t))
    hits = [t for _, _, t in sorted(scored)[:5]]
    if not hits:
        return ToolResult(content=f"no MCP tool matches {p.query!r}")
    ctx.instance(_Found, _Found).names.update(t.name for t in hits)
    lines = [f"{t.name}: {t.description}\n  parameters: {json.dumps(t.input_schema)}" for t in hits]
    return ToolResult(content="callable now:\n" + "\n".join(lines))


SEARCH_TOOL = ToolDescriptor(
    name=SEARCH,
    description="Find MCP tools by name or description; the matches become callable.",
    params=SearchParams,
    run=_search,
    risk="read",
    kind="read",
)


async def start_servers(ctx: TurnContext) -> McpCatalog | None:
    """The workspace's servers started (or re-checked) for this turn; None when none is
    configured (then no catalog is made: no work)."""
    if not configured(ctx.app):
        return None
    cat = catalog_for(ctx.app)
    await cat.refresh(ctx)
    return cat
