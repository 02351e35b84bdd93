"""The `serve` tool: start, stop and list long-running processes (dev servers, a static
file server) that outlive the tool call, bound to 127.0.0.1, one registry per session."""

from __future__ import annotations

import asyncio
import contextlib
import re
import shlex
import sys
from typing import Literal

from pydantic import ConfigDict, Field, model_validator

from ndomo.runtime.callnotes import note_sandbox, sandbox_label
from ndomo.runtime.context import TurnContext
from ndomo.runtime.edits import save_turn_edits
from ndomo.runtime.output import output_stream
from ndomo.runtime.tools import ToolError, ToolResult, call_grant, tool
from ndomo.schema import Schema
from ndomo.security.paths import PathRefused, relative_to_workspace, resolve_in_workspace
from ndomo.security.relay import host_port, served_argv
from ndomo.security.sandbox import SandboxRefused, prepare
from ndomo.tools.shell.processes import HOST, ServeError, ServeManager, free_port, shell_argv

READY_WAIT_S = 10.0
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$")


class ServeParams(Schema):
    model_config = ConfigDict(extra="forbid")
    action: Literal["start", "stop", "list"]
    command: str | None = Field(
        default=None,
        min_length=1,
        description="binds $HOST:$PORT",
    )
    static_dir: str | None = Field(
        default=None,
        min_length=1,
        description="or: serve this folder",
    )
    name: str | None = Field(default=None, description="needed to stop")
    port: int | None = Field(default=None, ge=1024, le=65535, json_schema_extra={"x-hidden": True})

    @model_validator(mode="after")
    def _shape(self) -> ServeParams:
        if self.action == "start" and (self.command is None) == (self.static_dir is None):
            raise ValueError("start needs exactly one of command or static_dir")
        if self.action != "start" and (self.command or self.static_dir or self.port):
            raise ValueError(f"{self.action} takes only name")
        if self.action == "stop" and not self.name:
            raise ValueError("stop needs the name of what to stop")
        if self.name is not None and not _NAME.match(self.name):
            raise ValueError("name: letters, digits, '.', '_' or '-', at most 40 characters")
        return self


async def _launch(ctx: TurnContext, mgr: ServeManager, p: ServeParams, box, port: int, listener):
    root = ctx.app.root
    if p.static_dir is not None:
        try:
            folder = resolve_in_workspace(p.static_dir, ctx.roots)
        except PathRefused as exc:
            raise ToolError(exc.message) from None
        if not folder.is_dir():
            raise ToolError(f"{p.static_dir} is not a folder in the workspace")
        name, kind = p.name or "static", "static"
        argv = static_argv(str(folder), port)
        shown = f"static files of {relative_to_workspace(folder, ctx.roots)}/"
        env: dict[str, str] = {}
    else:
        name, kind = p.name or "server", "command"
        argv = shell_argv(p.command or "")
        shown = p.command or ""
        env = {"PORT": str(port), "HOST": HOST}
    outer = None
    if box.sandboxed and not box.network:
        try:
            outer = host_port(port)
        except OSError as exc:
            raise ToolError(f"port {port} on {HOST} is not free: {exc}") from None
        argv = served_argv(argv, outer.fileno(), port)
    try:
        return await mgr.start(
            ctx.session.id,
            name,
            kind,
            argv,
            shown,
            port,
            root,
            env,
            prefix=box.prefix,
            on_stop=box.close,
            listener=listener,
            pass_fds=(outer.fileno(),) if outer is not None else (),
        )
    finally:
        if outer is not None:
            outer.close()  # the sandbox's relay holds it now


def manager_for(ctx: TurnContext) -> ServeManager:
    # The App closes it: served processes die with the workspace's app.
    return ctx.app.instance(ServeManager, ServeManager)


def static_argv(directory: str, port: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "http.server",
        "--bind",
        HOST,
        "--directory",
        directory,
        str(port),
    ]


def _command_for_policy(p: ServeParams) -> str | None:
    """What the bash permission judges; None for stop/list, which start nothing."""
    if p.action != "start":
        return None
    if p.command is not None:
        return p.command
    return shlex.join(
        ["python3", "-m", "http.server", "--bind", HOST, "--directory", p.static_dir or ".", "PORT"]
    )


@tool(
    "serve",
    ServeParams,
    description="Start, stop or list servers on 127.0.0.1 (sandboxed, offline unless approved).",
    risk="exec",
    permission="bash",
    command=_command_for_policy,
)
async def serve(ctx: TurnContext, p: ServeParams) -> ToolResult:
    mgr = manager_for(ctx)
    sid = ctx.session.id
    try:
        if p.action == "list":
            infos = [s.info() for s in mgr.of(sid).values()]
            if not infos:
                return ToolResult(
                    content="nothing is being served in this session", data={"served": []}
                )
            lines = []
            for i in infos:
                state = "running" if i.running else f"exited with {i.exit_code}"
                lines.append(f"{i.name}: {state} · {i.url} · pid {i.pid} · {i.command}")
                lines += [f"    | {line}" for line in i.recent_output]
            return ToolResult(
                content="\n".join(lines), data={"served": [i.model_dump() for i in infos]}
            )
        if p.action == "stop":
            served, notes = await mgr.stop(sid, p.name or "")
            return ToolResult(
                content="\n".join([f"stopped '{served.name}' (port {served.port})", *notes])
            )
        return await _start(ctx, mgr, p)
    except ServeError as exc:
        raise ToolError(str(exc)) from None


async def _start(ctx: TurnContext, mgr: ServeManager, p: ServeParams) -> ToolResult:
    live = output_stream(ctx)  # the editor sees the server's output while the call waits for it
    try:
        return await _start_served(ctx, mgr, p, live)
    finally:
        if live is not None:
            for served in mgr.of(ctx.session.id).values():
                if live.feed in served.listeners:
                    served.listeners.remove(live.feed)
            await live.close()


async def _start_served(ctx: TurnContext, mgr: ServeManager, p: ServeParams, live) -> ToolResult:
    """Start it under the same rules as `bash`: offline unless the call was granted the
    network. Offline, it has a loopback of its own; a relay opens its port (only that port,
    only inward) on the host's 127.0.0.1 for check_page and the user."""
    await save_turn_edits(ctx)  # the served process reads the disk
    listener = live.feed if live is not None else None
    port = p.port or free_port()
    root = ctx.app.root
    network = call_grant().network
    try:
        box = await prepare(
            ctx.app.settings, root, network=network, hide_secrets=call_grant().hide_secrets
        )
        if box.state.backend == "sandbox-exec" and not box.network:
            # Seatbelt has no loopback of its own to relay from: offline would mean no port
            await box.close()
            box = await prepare(ctx.app.settings, root, network=True)
    except SandboxRefused as exc:
        raise ToolError(str(exc)) from None
    note_sandbox(sandbox_label(box.sandboxed, box.network, None))  # the card's words
    try:
        served = await _launch(ctx, mgr, p, box, port, listener)
    except BaseException:
        await asyncio.shield(box.close())  # nothing runs in it: release what it holds
        raise
    name = served.name
    ready = await mgr.wait_ready(served, READY_WAIT_S)
    if not served.running and served.pump is not None:  # let the reader collect its last words
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.shield(served.pump), 2.0)
    info = served.info(tail=10)
    data = {**info.model_dump(), "sandbox": box.state.label(), "network": box.network}
    tail = "\n".join(f"    | {line}" for line in info.recent_output)
    notes = [*box.notes, *await box.after_run()]
    if not served.running:
        await mgr.stop(ctx.session.id, name)
        raise ToolError(
            f"'{name}' exited at once with code {info.exit_code}"
            + (f":\n{tail}" if tail else " (no output)")
        )
    net = "with network" if box.network else "offline (its port is relayed to the host)"
    head = (
        f"serving '{name}' at {info.url} (pid {info.pid}, {net})"
        if ready
        else f"started '{name}' (pid {info.pid}) but nothing listens on {info.url} yet after {READY_WAIT_S:g}s; "
        "check it with serve action=list"
    )
    return ToolResult(content="\n".join([head + (f"\n{tail}" if tail else ""), *notes]), data=data)
