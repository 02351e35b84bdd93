"""One MCP server's connection: started lazily, its tool and prompt lists cached, restarted
after a crash.

The SDK's transports are async context managers that must be entered and left in one task,
so each connection runs in its own task (`_serve`), which holds the session until `stop`.
A stdio server starts under the same OS sandbox profile as `bash` (security.sandbox):
workspace writable but its control files, home hidden, offline unless the server's
definition says `network: allow`; the variables its definition sets pass the secret scrub
for it alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal

from ndomo.tools.mcp.sources import ServerSpec

if TYPE_CHECKING:
    from mcp import types

    from ndomo.config import Settings
    from ndomo.security.sandbox import Sandboxed

log = logging.getLogger("ndomo.mcp")

State = Literal["idle", "starting", "ready", "failed", "stopped"]
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class McpCallError(Exception):
    """A call did not get an answer: the server crashed, timed out or refused to start."""


class McpRefused(McpCallError):
    """The server answered a request with an error; it keeps running."""


def _is_answer(exc: BaseException | None) -> bool:
    """The server's own error answer (not the SDK saying the connection closed or timed out)."""
    from mcp import MCPError
    from mcp.types import CONNECTION_CLOSED, REQUEST_TIMEOUT

    return isinstance(exc, MCPError) and exc.code not in (CONNECTION_CLOSED, REQUEST_TIMEOUT)


def _expand(value: str) -> str:
    """`${VAR}` from the environment: header secrets come from variables the user names."""
    return _VAR.sub(lambda m: os.environ.get(m.group(1), ""), value)


class Connection:
    def __init__(self, spec: ServerSpec, settings: Settings, root: Path) -> None:
        self.spec = spec
        self.settings = settings
        self.root = root
        self.state: State = "idle"
        self.error = ""
        self.tools: list[types.Tool] = []
        self.prompts: list[types.Prompt] = []  # empty when the server offers none
        self.resources: list[types.Resource] = []  # listed ones (not templates); idem
        self.sandbox = ""  # how it runs: "sandboxed (bubblewrap)", "not sandboxed", "remote"
        self.starts = 0
        # the server said its tool list changed (notifications/tools/list_changed)
        self.stale = False
        # … or its prompt list (notifications/prompts/list_changed), or its resources'
        self.prompts_stale = False
        self.resources_stale = False
        self._session: Any = None
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._lock = asyncio.Lock()
        # the server's stderr: kept (never shown on a terminal or the LSP stream) so that a
        # failure can quote its last lines, made inert
        self._stderr: IO[str] | None = None

    @property
    def changed(self) -> bool:
        """The server said its tool or prompt list changed since it was listed."""
        return self.stale or self.prompts_stale or self.resources_stale

    @property
    def sandboxed(self) -> bool | None:
        """None for an http server (nothing runs here)."""
        if self.spec.config.type == "http":
            return None
        return self.sandbox.startswith("sandboxed")

    async def ensure(self) -> None:
        """Started and its tools listed; raises McpCallError when it cannot start."""
        async with self._lock:
            if self.state == "ready" and self._task is not None and not self._task.done():
                return
            await self._halt()
            self.state, self.error = "starting", ""
            self._stop = asyncio.Event()
            ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._task = asyncio.create_task(self._serve(ready), name=f"mcp:{self.spec.name}")
            self.starts += 1
            try:
                await asyncio.wait_for(
                    asyncio.shield(ready), timeout=self.settings.mcp.start_timeout_s
                )
            except TimeoutError:
                self.error = f"did not answer within {self.settings.mcp.start_timeout_s:g} s"
                await self._halt()
                self.state = "failed"
            except McpCallError as exc:
                self.error = self.error or str(exc)
                await self._halt()
                self.state = "failed"
            if self.state != "ready":
                raise McpCallError(f"MCP server '{self.spec.name}' did not start: {self.error}")

    async def _serve(self, ready: asyncio.Future[None]) -> None:
        from mcp.client.session import ClientSession

        box: Sandboxed | None = None
        try:
            async with contextlib.AsyncExitStack() as stack:
                if self.spec.config.type == "http":
                    streams = await stack.enter_async_context(self._http(stack))
                    self.sandbox = "remote"
                else:
                    box, transport = await self._stdio()
                    streams = await stack.enter_async_context(transport)
                session = await stack.enter_async_context(
                    ClientSession(streams[0], streams[1], message_handler=self._notified)
                )
                started = await session.initialize()
                self.tools = await _all_tools(session)
                offers = started.capabilities
                self.prompts = await _all_prompts(session) if offers.prompts else []
                self.resources = await _all_resources(session) if offers.resources else []
                self.stale = self.prompts_stale = self.resources_stale = False
                self._session = session
                self.state = "ready"
                if not ready.done():
                    ready.set_result(None)
                await self._stop.wait()
        except BaseException as exc:
            error = _reason(exc)
            said = self.stderr_tail()
            if said:
                error += f" (its stderr: {said})"
            self.error = self.error or error
            if not ready.done():
                ready.set_exception(McpCallError(error))
            if isinstance(exc, asyncio.CancelledError):
                raise
            log.info("MCP server %s ended: %s", self.spec.name, error)
        finally:
            self._session = None
            if self.state == "ready":
                self.state = "stopped"
            if box is not None:
                await asyncio.shield(box.close())

    async def _notified(self, message: Any) -> None:
        from mcp import types

        if isinstance(message, types.ToolListChangedNotification):
            self.stale = True
        elif isinstance(message, types.PromptListChangedNotification):
            self.prompts_stale = True
        elif isinstance(message, types.ResourceListChangedNotification):
            self.resources_stale = True

    async def relist(self) -> None:
        """The tool, prompt and resource lists again, each after the server said it changed."""
        session = self._session
        if session is None:
            return
        timeout = self.settings.mcp.start_timeout_s
        for what, flag, lister in (
            ("tools", "stale", _all_tools),
            ("prompts", "prompts_stale", _all_prompts),
            ("resources", "resources_stale", _all_resources),
        ):
            if not getattr(self, flag):
                continue
            setattr(self, flag, False)
            try:
                setattr(self, what, await asyncio.wait_for(lister(session), timeout=timeout))
            except (TimeoutError, Exception) as exc:  # noqa: BLE001 - a bad listing keeps the last one
                log.warning(
                    "MCP server %s: listing its %s again failed: %s", self.spec.name, what, exc
                )

    def _http(self, stack: contextlib.AsyncExitStack) -> Any:
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        headers = {k: _expand(v) for k, v in self.spec.config.headers.items()}
        client = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=300.0))
        stack.push_async_callback(
            client.aclose
        )  # ours to close: the SDK leaves a given client open
        return streamable_http_client(self.spec.config.url or "", http_client=client)

    async def _stdio(self) -> tuple[Sandboxed, Any]:
        from mcp.client.stdio import StdioServerParameters, stdio_client

        from ndomo.security.sandbox import SandboxRefused, prepare

        c = self.spec.config
        # the server's own variables pass the scrub, for this server only
        sandbox = self.settings.sandbox.model_copy(
            update={"env_allow": [*self.settings.sandbox.env_allow, *c.env]}
        )
        settings = self.settings.model_copy(update={"sandbox": sandbox})
        try:
            box = await prepare(settings, self.root, network=c.network == "allow")
        except SandboxRefused as exc:
            self.error = str(exc)
            raise
        self.sandbox = box.state.label() if box.sandboxed else "not sandboxed"
        argv = [*box.prefix, c.command or "", *c.args]
        env = {k: _expand(v) for k, v in c.env.items()}  # `${VAR}`: from ndomo's environment
        params = StdioServerParameters(
            command=argv[0], args=argv[1:], env=env or None, cwd=str(self.root)
        )
        if self._stderr is not None:
            self._stderr.close()
        self._stderr = tempfile.TemporaryFile("w+")  # noqa: SIM115 - lives as long as the connection
        return box, stdio_client(params, errlog=self._stderr)

    async def call(self, tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
        """One tool call; a crash or timeout stops the connection (the next call restarts it)."""
        return await self._ask(tool, lambda s: s.call_tool(tool, arguments))

    async def get_prompt(self, name: str, arguments: dict[str, str]) -> types.GetPromptResult:
        """`prompts/get`: the prompt's messages with these arguments filled in."""
        from mcp import types

        result = await self._ask(f"prompt {name}", lambda s: s.get_prompt(name, arguments))
        if not isinstance(result, types.GetPromptResult):
            raise McpCallError(f"MCP server '{self.spec.name}' asked for more input for '{name}'")
        return result

    async def read_resource(self, uri: str) -> types.ReadResourceResult:
        """`resources/read`: the resource's contents (text or blobs)."""
        from mcp import types

        result = await self._ask(f"read {uri}", lambda s: s.read_resource(uri))
        if not isinstance(result, types.ReadResourceResult):
            raise McpCallError(f"MCP server '{self.spec.name}' asked for more input for {uri}")
        return result

    async def _ask(self, what: str, request: Callable[[Any], Awaitable[Any]]) -> Any:
        """One request to the server within the definition's timeout; a crash or timeout
        stops the connection (the next request restarts it)."""
        await self.ensure()
        session = self._session
        if session is None:
            raise McpCallError(f"MCP server '{self.spec.name}' is not running: {self.error}")
        task = self._task
        call = asyncio.ensure_future(request(session))
        waits: set[asyncio.Future[Any]] = {call}
        if task is not None:
            waits.add(task)
        done, _ = await asyncio.wait(
            waits, timeout=self.spec.config.timeout_s, return_when=asyncio.FIRST_COMPLETED
        )
        if call in done and call.exception() is None:
            return call.result()
        if call in done and _is_answer(call.exception()):
            # the server answered with an error (an unknown prompt, a bad argument): it runs on
            raise McpRefused(f"MCP server '{self.spec.name}' refused {what}: {call.exception()}")
        call.cancel()
        with contextlib.suppress(BaseException):
            await call
        if not done:
            why = f"no answer within {self.spec.config.timeout_s:g} s"
        elif call in done:
            why = _reason(call.exception())
        else:
            why = f"the server exited ({self.error or 'no reason given'})"
        await self.stop()
        self.state, self.error = "failed", why
        raise McpCallError(
            f"MCP server '{self.spec.name}' failed during '{what}': {why}; "
            "it is restarted on the next call"
        )

    async def stop(self) -> None:
        async with self._lock:
            await self._halt()
            self.state = "stopped"

    async def _halt(self) -> None:
        task, self._task = self._task, None
        if task is None:
            return
        self._stop.set()
        try:
            await asyncio.wait_for(asyncio.shield(task), timeout=5)
        except BaseException:  # noqa: BLE001 - whatever ended it, the task is cancelled and awaited
            task.cancel()
            with contextlib.suppress(BaseException):
                await task

    def stderr_tail(self, chars: int = 400) -> str:
        """The last lines the server wrote to stderr, on one inert line."""
        from ndomo.security.text import one_line

        f = self._stderr
        if f is None or f.closed:
            return ""
        try:
            f.flush()
            fd = f.fileno()
            size = os.fstat(fd).st_size
            start = max(0, size - chars * 4)
            text = os.pread(fd, size - start, start).decode("utf-8", "replace")
        except (OSError, ValueError):
            return ""
        return one_line(text.strip(), chars) if text.strip() else ""

    async def aclose(self) -> None:
        await self.stop()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None


async def _paged(list_page: Callable[..., Awaitable[Any]], field: str) -> list[Any]:
    """Every page of a `*/list` request, joined (`field`: the page's list)."""
    from mcp import types

    items: list[Any] = []
    cursor = None
    for _ in range(100):  # a server that pages forever is cut off
        params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await list_page(params=params)
        items.extend(getattr(page, field))
        cursor = page.next_cursor
        if not cursor:
            break
    return items


async def _all_tools(session: Any) -> list[types.Tool]:
    return await _paged(session.list_tools, "tools")


async def _all_prompts(session: Any) -> list[types.Prompt]:
    return await _paged(session.list_prompts, "prompts")


async def _all_resources(session: Any) -> list[types.Resource]:
    return await _paged(session.list_resources, "resources")


def _reason(exc: BaseException | None) -> str:
    """One line for what went wrong (an exception group shows its first leaf)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if exc is None:
        return "unknown error"
    text = str(exc).strip() or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if type(exc).__name__ not in text else text
