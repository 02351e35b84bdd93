"""The ACP agent: `initialize`, sessions, prompt turns, modes and the agent as config
options, cancel — each request answered by the same engine `ndomo run` and the editors use
(one `App` and its `Runtime` per workspace root, sessions in the workspace's store)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

from acp.schema import (
    AgentCapabilities,
    AvailableCommand,
    AvailableCommandInput,
    ConfigOptionUpdate,
    EmbeddedResourceContentBlock,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PlanEntry,
    PromptCapabilities,
    PromptResponse,
    ResourceContentBlock,
    SessionConfigOptionBoolean,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SessionInfo,
    SessionMode,
    SessionModeState,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
    TextContentBlock,
    TextResourceContents,
    UnstructuredCommandInput,
    Usage,
)

from acp import PROTOCOL_VERSION, RequestError, helpers
from ndomo import __version__
from ndomo.acp.host import KIND_OF_CLASS, KIND_OF_NAME, AcpHost, title
from ndomo.acp.mcp import mcp_configs

if TYPE_CHECKING:
    from acp.interfaces import Client

    from ndomo.app import App
    from ndomo.config import McpServerConfig
    from ndomo.runtime.context import SessionState, TurnSummary
    from ndomo.runtime.events import Status
    from ndomo.runtime.plugins import Plugins
    from ndomo.runtime.runtime import Runtime

log = logging.getLogger("ndomo.acp")

# The turn's outcome (`TurnSummary.status`) as an ACP stop reason. "capped" is refined by
# why it stopped (the output limit is max_tokens, the iteration cap max_turn_requests).
STOP_OF = {"done": "end_turn", "blocked": "end_turn", "cancelled": "cancelled"}
DEBOUNCE_S = 0.03
RESOURCE_CHARS = 24_000  # one linked MCP resource's share of the prompt (like an @-mention)
PLAN_STATUS = {"pending": "pending", "running": "in_progress", "done": "completed"}


def _untrusted_note(root: Path) -> str:
    return (
        f"This folder is not trusted: ndomo runs it untrusted (its .ndomo config, agents, "
        f"reflexes and instruction files are not loaded). To trust it: ndomo trust {root}\n\n"
    )


def _path_of(uri: str) -> Path | None:
    parsed = urlparse(uri)
    if parsed.scheme not in ("file", ""):
        return None
    return Path(unquote(parsed.path))


def _usage(summary: TurnSummary) -> Usage | None:
    """The turn's tokens as the model server counted them (every request of the turn)."""
    if not (summary.tokens_in or summary.tokens_out):
        return None
    return Usage(
        input_tokens=summary.tokens_in,
        output_tokens=summary.tokens_out,
        total_tokens=summary.tokens_in + summary.tokens_out,
    )


@dataclass
class _Session:
    id: str
    root: Path
    app: App
    runtime: Runtime
    told_untrusted: bool = False
    turn: asyncio.Task | None = None
    cancelled: bool = False
    mode: str = ""
    agent: str = ""
    plan_shown: Any = None
    commands_shown: Any = None


@dataclass
class _Workspace:
    app: App
    runtime: Runtime
    sessions: set[str] = field(default_factory=set)
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    watch: Any = None
    worker: asyncio.Task | None = None

    def poke(self) -> None:
        self.changed.set()

    async def aclose(self) -> None:
        if self.watch is not None:
            self.watch.close()
        if self.worker is not None:
            self.worker.cancel()
            await asyncio.gather(self.worker, return_exceptions=True)
        await self.app.aclose()


class NdomoAgent:
    """The agent side of one ACP connection (the SDK's `Agent` protocol)."""

    def __init__(self, plugins: Callable[[], Plugins]) -> None:
        self._plugins = plugins
        self.client: Client | None = None
        self.reads = False
        self.writes = False
        self.workspaces: dict[Path, _Workspace] = {}
        self.sessions: dict[str, _Session] = {}
        self._loading = asyncio.Lock()
        self._background: set[asyncio.Task] = set()

    def on_connect(self, conn: Client) -> None:
        self.client = conn

    # -- lifecycle ---------------------------------------------------------------------

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: Any = None,
        client_info: Any = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        fs = getattr(client_capabilities, "fs", None)
        self.reads = bool(fs and fs.read_text_file)
        self.writes = bool(fs and fs.write_text_file)
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(embedded_context=True),
                mcp_capabilities=McpCapabilities(http=True, sse=False),
            ),
            agent_info=Implementation(name="ndomo", title="ndomo", version=__version__),
            auth_methods=[],
        )

    async def authenticate(self, method_id: str, **kwargs: Any) -> None:
        raise RequestError.invalid_params({"message": "ndomo needs no authentication"})

    async def aclose(self) -> None:
        """The client is gone: stop every turn (and its commands), close the stores."""
        for ws in self.workspaces.values():
            try:
                await ws.aclose()
            except Exception:  # noqa: BLE001 - one workspace that fails to close must not keep the others open
                log.exception("closing %s failed", ws.app.root)
        for task in self._background:
            task.cancel()

    # -- sessions ----------------------------------------------------------------------

    async def _workspace(self, cwd: str) -> _Workspace:
        root = Path(cwd)
        if not root.is_absolute() or not root.is_dir():
            raise RequestError.invalid_params(
                {"message": f"cwd must be an absolute path to a folder: {cwd!r}"}
            )
        root = root.resolve()
        async with self._loading:
            ws = self.workspaces.get(root)
            if ws is None:
                from ndomo.app import App
                from ndomo.runtime.runtime import Runtime

                # the registries (the first time: every feature's imports) off the loop too
                plugins = await asyncio.to_thread(self._plugins)
                app = await asyncio.to_thread(App.load, root)
                if app.no_store_reason is not None:
                    await app.aclose()
                    raise RequestError.invalid_request({"message": app.no_store_reason})
                rt = Runtime.of(app, plugins)
                ws = self.workspaces[root] = _Workspace(app, rt)
                rt.status_listeners.add(self._status_changed)
                await self._watch(ws)
            return ws

    async def _watch(self, ws: _Workspace) -> None:
        """Follow the store: this process's commits and other processes' (`ndomo task
        status`, another editor) refresh each session's plan and mode. An idle store wakes
        nothing (store.watch: inotify on the database files)."""
        from ndomo.store.watch import DbWatch

        store = await ws.app.store()
        store.commit_listeners.add(ws.poke)
        db_path = getattr(store, "db_path", None)
        if db_path is not None:
            ws.watch = DbWatch(Path(db_path), ws.poke)
            ws.watch.start()
        ws.worker = asyncio.create_task(self._follow(ws))

    async def _follow(self, ws: _Workspace) -> None:
        while True:
            await ws.changed.wait()
            await asyncio.sleep(DEBOUNCE_S)  # a burst of commits → one refresh
            ws.changed.clear()
            for sid in list(ws.sessions):
                s = self.sessions[sid]
                try:
                    state = await ws.runtime.session(sid)
                    await self._sync(s, state.mode, state.agent)
                    await self._send_plan(s)
                except Exception:  # noqa: BLE001 - one session's refresh must not stop the others'
                    log.exception("refreshing session %s failed", sid)

    @staticmethod
    def _mcp(ws: _Workspace, configs: dict[str, McpServerConfig]) -> None:
        """The editor's MCP servers join the workspace's (started with the next turn, like
        the user's own: the editor's settings are the user's, never asked about)."""
        if configs:
            from ndomo.tools.mcp.catalog import catalog_for

            catalog_for(ws.app).add_client_servers(configs)

    async def new_session(
        self, cwd: str, additional_directories: Any = None, mcp_servers: Any = None, **kwargs: Any
    ) -> NewSessionResponse:
        configs = mcp_configs(mcp_servers)  # a bad one refuses the session before it exists
        ws = await self._workspace(cwd)
        self._mcp(ws, configs)
        state = await ws.runtime.session(new=True)
        s = self._open(ws, state)
        modes, options = await self._choices(s)
        self._soon(self._announce(s))
        return NewSessionResponse(session_id=s.id, modes=modes, config_options=options)

    async def load_session(
        self,
        cwd: str,
        session_id: str,
        mcp_servers: Any = None,
        additional_directories: Any = None,
        **kwargs: Any,
    ) -> LoadSessionResponse:
        configs = mcp_configs(mcp_servers)  # a bad one refuses the load
        ws = await self._workspace(cwd)
        self._mcp(ws, configs)
        store = await ws.app.store()
        from ndomo.store.errors import StoreError

        try:
            await store.get_session(session_id)
        except StoreError:
            raise RequestError.resource_not_found(session_id) from None
        state = await ws.runtime.session(session_id)
        s = self._open(ws, state)
        await self._replay(s)
        modes, options = await self._choices(s)
        self._soon(self._announce(s))
        return LoadSessionResponse(modes=modes, config_options=options)

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> ListSessionsResponse:
        if cwd is None:
            raise RequestError.invalid_params({"message": "ndomo lists the sessions of a cwd"})
        ws = await self._workspace(cwd)
        rows = await (await ws.app.store()).list_sessions()
        return ListSessionsResponse(
            sessions=[
                SessionInfo(
                    session_id=r.id,
                    cwd=str(ws.app.root),
                    title=r.title,
                    updated_at=r.used_at or r.created_at,
                )
                for r in rows
            ]
        )

    def _open(self, ws: _Workspace, state: SessionState) -> _Session:
        s = self.sessions.get(state.id)
        if s is None:
            assert ws.app.root is not None
            s = _Session(
                state.id, ws.app.root, ws.app, ws.runtime, mode=state.mode, agent=state.agent
            )
            self.sessions[state.id] = s
            ws.sessions.add(state.id)
        return s

    def _session(self, session_id: str) -> _Session:
        s = self.sessions.get(session_id)
        if s is None:
            raise RequestError.resource_not_found(session_id)
        return s

    def _soon(self, work: Any) -> None:
        """Send after the current response: a client learns a session from its response."""

        async def later() -> None:
            await asyncio.sleep(0)
            try:
                await work
            except Exception:  # noqa: BLE001 - a background session update: logged, the session goes on
                log.exception("a session update failed")

        task = asyncio.create_task(later())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _update(self, s: _Session, update: Any) -> None:
        assert self.client is not None
        await self.client.session_update(session_id=s.id, update=update)

    async def _announce(self, s: _Session) -> None:
        await self._send_commands(s)
        await self._send_plan(s)

    async def _send_commands(self, s: _Session) -> None:
        """`available_commands_update` when the commands changed since the client was told
        (an MCP server's prompts are known once its server started, with the first turn)."""
        specs = await s.runtime.plugins.slash.listed(s.app)
        shown = [(spec.name, spec.help, spec.usage) for spec in specs]
        if shown == s.commands_shown:
            return
        s.commands_shown = shown
        commands = [
            AvailableCommand(
                name=spec.name,
                description=spec.help or spec.name,
                input=AvailableCommandInput(
                    root=UnstructuredCommandInput(hint=spec.usage or "arguments")
                )
                if spec.usage
                else None,
            )
            for spec in specs
        ]
        await self._update(s, helpers.update_available_commands(commands))

    async def _choices(
        self, s: _Session
    ) -> tuple[SessionModeState, list[SessionConfigOptionSelect | SessionConfigOptionBoolean]]:
        state = await s.runtime.session(s.id)
        modes = s.runtime.plugins.modes
        mode_list = [
            SessionMode(id=name, name=name, description=m.contract.summary)
            for name, m in modes.items()
        ]
        agents = await s.runtime.agents()
        options: list[SessionConfigOptionSelect | SessionConfigOptionBoolean] = [
            SessionConfigOptionSelect(
                id="mode",
                name="Mode",
                category="mode",
                type="select",
                current_value=state.mode,
                options=[
                    SessionConfigSelectOption(value=m.id, name=m.name, description=m.description)
                    for m in mode_list
                ],
            ),
            SessionConfigOptionSelect(
                id="agent",
                name="Agent",
                type="select",
                current_value=state.agent,
                options=[
                    SessionConfigSelectOption(value=a.name, name=a.name, description=a.description)
                    for a in agents.primaries()
                ],
            ),
        ]
        return SessionModeState(current_mode_id=state.mode, available_modes=mode_list), options

    async def _replay(self, s: _Session) -> None:
        """The stored conversation as the updates a live turn sent."""
        store = await s.app.store()
        for m in await store.session_messages(s.id):
            if m.role == "user" and m.content:
                await self._update(s, helpers.update_user_message_text(m.content))
            elif m.role == "assistant":
                if m.content:
                    await self._update(s, helpers.update_agent_message_text(m.content))
                for call in m.tool_calls:
                    kind = KIND_OF_NAME.get(call["name"]) or self._kinds(s).get(
                        call["name"], "other"
                    )
                    await self._update(
                        s,
                        helpers.start_tool_call(
                            call["id"],
                            title(call["name"], call.get("arguments") or {}),
                            kind=kind,  # type: ignore[arg-type]
                            status="completed",
                            raw_input=call.get("arguments") or {},
                        ),
                    )
            elif m.role == "tool" and m.tool_call_id and m.content:
                await self._update(
                    s,
                    helpers.update_tool_call(
                        m.tool_call_id,
                        content=[helpers.tool_content(helpers.text_block(m.content))],
                    ),
                )

    async def _send_plan(self, s: _Session) -> None:
        """The session's committed plan and its tasks as a `plan` update (when it changed)."""
        state = await s.runtime.session(s.id)
        if not state.committed_plan_id:
            return
        store = await s.app.store()
        try:
            plan = await store.get_plan(state.committed_plan_id)
        except Exception:  # noqa: BLE001 - no plan to show is not an error for the client
            log.debug("plan %s unavailable", state.committed_plan_id, exc_info=True)
            return
        entries = [
            PlanEntry(
                content=t.description,
                priority="medium",
                status=PLAN_STATUS.get(t.status, "completed"),  # type: ignore[arg-type]
            )
            for t in plan.tasks
        ]
        shown = [(e.content, e.status) for e in entries]
        if shown != s.plan_shown:
            s.plan_shown = shown
            await self._update(s, helpers.update_plan(entries))

    async def _status_changed(self, status: Status) -> None:
        """A mode or agent switched in this process (a slash command, set_mode)."""
        s = self.sessions.get(status.session)
        if s is not None:
            await self._sync(s, status.mode, status.agent)

    async def _sync(self, s: _Session, mode: str, agent: str) -> None:
        """Tell the client of a mode or agent it did not see change (set here, by a slash
        command, or in another process): `current_mode_update`, `config_option_update`."""
        if (mode, agent) == (s.mode, s.agent):
            return
        mode_changed = mode != s.mode
        s.mode, s.agent = mode, agent
        if mode_changed:
            await self._update(s, helpers.update_current_mode(mode))
        _modes, options = await self._choices(s)
        await self._update(
            s, ConfigOptionUpdate(session_update="config_option_update", config_options=options)
        )

    # -- modes and agents --------------------------------------------------------------

    async def set_session_mode(
        self, session_id: str, mode_id: str, **kwargs: Any
    ) -> SetSessionModeResponse:
        s = self._session(session_id)
        await self._set(s, "mode", mode_id)
        return SetSessionModeResponse()

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **kwargs: Any
    ) -> SetSessionConfigOptionResponse:
        s = self._session(session_id)
        if config_id not in ("mode", "agent") or not isinstance(value, str):
            raise RequestError.invalid_params(
                {"message": f"unknown config option {config_id!r}: ndomo has mode and agent"}
            )
        await self._set(s, config_id, value)
        _modes, options = await self._choices(s)
        return SetSessionConfigOptionResponse(config_options=options)

    async def _set(self, s: _Session, what: str, value: str) -> None:
        from ndomo.runtime.runtime import TurnRefused

        try:
            if what == "mode":
                await s.runtime.set_mode(value, s.id)
            else:
                await s.runtime.set_agent(value, s.id)
        except TurnRefused as exc:
            raise RequestError.invalid_params({"message": str(exc)}) from None

    # -- prompt turns ------------------------------------------------------------------

    def _kinds(self, s: _Session) -> dict[str, str]:
        return {
            t.name: KIND_OF_NAME.get(t.name) or KIND_OF_CLASS.get(t.tool_kind, "other")
            for t in s.runtime.plugins.tools.all()
        }

    async def _prompt_text(
        self, s: _Session, blocks: list[Any]
    ) -> tuple[str, str, dict[Path, str]]:
        """The prompt's text with each mentioned file named; the embedded files' texts (an
        editor's unsaved buffers), to go under it cut to the mentions' budget as every front
        end's mentions are; and the overlay: what reads of those files see during the turn.
        A link to a resource an MCP server lists is read through that server and quoted."""
        from ndomo.features.mentions import Mentioned, render
        from ndomo.security.paths import workspace_name

        parts: list[str] = []
        embedded: list[Mentioned] = []
        overlay: dict[Path, str] = {}
        for b in blocks:
            if isinstance(b, TextContentBlock):
                parts.append(b.text)
            elif isinstance(b, ResourceContentBlock):
                path = _path_of(b.uri)
                if path is not None:
                    parts.append(f"[file: {path}]")
                else:
                    parts.append(await self._resource(s, b.uri))
            elif isinstance(b, EmbeddedResourceContentBlock):
                res = b.resource
                if isinstance(res, TextResourceContents):
                    path = _path_of(res.uri)
                    if path is not None:
                        overlay[path] = res.text
                    parts.append(f"[file: {path or res.uri}]")
                    name = workspace_name(path, [s.root]) if path is not None else res.uri
                    embedded.append(Mentioned(name, res.text))
                else:
                    raise RequestError.invalid_params(
                        {"message": "ndomo takes text resources only"}
                    )
            else:
                raise RequestError.invalid_params(
                    {"message": f"ndomo takes text and resources, not {b.type} content"}
                )
        return "\n\n".join(p for p in parts if p), render(embedded), overlay

    async def _resource(self, s: _Session, uri: str) -> str:
        """A resource link: the MCP resource's text (capped visibly), or the link named when
        no server lists it."""
        from ndomo.security.text import cap
        from ndomo.tools.mcp.catalog import McpUnavailable
        from ndomo.tools.mcp.resources import linked

        try:
            found = await linked(s.app, uri)
        except McpUnavailable as exc:
            raise RequestError.invalid_params({"message": str(exc)}) from None
        if found is None:
            return f"[resource: {uri}]"
        server, text = found
        return f"[resource {server}:{uri}]\n```\n{cap(text, RESOURCE_CHARS)}\n```"

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        s = self._session(session_id)
        if s.turn is not None and not s.turn.done():
            raise RequestError.invalid_request(
                {"message": "a prompt is already running in this session; cancel it first"}
            )
        text, attached, overlay = await self._prompt_text(s, prompt)
        if not text.strip():
            raise RequestError.invalid_params({"message": "the prompt is empty"})
        assert self.client is not None
        if not s.app.trust.trusted and not s.told_untrusted:
            s.told_untrusted = True
            await self._update(s, helpers.update_agent_message_text(_untrusted_note(s.root)))
        host = AcpHost(
            self.client,
            s.id,
            s.root,
            kinds=self._kinds(s),
            reads=self.reads,
            writes=self.writes,
            overlay=overlay,
        )
        from ndomo.runtime.context import TurnRequest

        s.cancelled = False
        request = TurnRequest(prompt=text, session=s.id).attach(attached)
        s.turn = asyncio.create_task(s.runtime.run(request, host))
        try:
            summary = await s.turn
        except asyncio.CancelledError:
            if not s.cancelled:
                raise
            return PromptResponse(stop_reason="cancelled")
        finally:
            s.turn = None
        if s.cancelled:
            return PromptResponse(stop_reason="cancelled")
        if (
            summary.error
            and summary.status not in ("done", "cancelled")
            and (
                summary.error != host.last_notice  # said once is enough
            )
        ):
            from ndomo.security.text import visible

            await self._update(
                s,
                helpers.update_agent_message_text(f"\n[{summary.status}] {visible(summary.error)}"),
            )
        with contextlib.suppress(Exception):
            await self._send_plan(s)
        try:
            await self._send_commands(s)
        except Exception:  # noqa: BLE001 - a stale command list must not fail the turn's answer
            log.exception("updating the command list failed")
        usage = _usage(summary)
        if summary.turn_id is None and summary.error:  # refused before it started
            return PromptResponse(stop_reason="refusal", usage=usage)
        if summary.status == "capped":
            limit = "output limit" in (summary.error or "")
            return PromptResponse(
                stop_reason="max_tokens" if limit else "max_turn_requests", usage=usage
            )
        stop = STOP_OF.get(summary.status, "end_turn")
        return PromptResponse(stop_reason=stop, usage=usage)  # type: ignore[arg-type]

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        s = self.sessions.get(session_id)
        if s is None or s.turn is None:
            return  # a notification: nothing to answer, nothing running
        s.cancelled = True
        if not s.runtime.cancel(s.id):
            s.turn.cancel()
