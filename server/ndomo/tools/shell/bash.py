"""The `bash` tool: one command in the workspace root, under a timeout and an output cap."""

from __future__ import annotations

import asyncio

from pydantic import ConfigDict, Field

from ndomo.runtime.callnotes import note_sandbox, sandbox_label
from ndomo.runtime.context import TurnContext
from ndomo.runtime.edits import save_turn_edits
from ndomo.runtime.output import output_stream
from ndomo.runtime.tools import ToolError, ToolResult, call_grant, tool
from ndomo.schema import Schema
from ndomo.security.destinations import Proxied
from ndomo.security.run import run_shell
from ndomo.security.sandbox import SandboxRefused, prepare

MAX_TIMEOUT_S = 600.0


class BashParams(Schema):
    model_config = ConfigDict(extra="forbid")
    command: str = Field(min_length=1)
    timeout_s: float | None = Field(
        default=None,
        gt=0,
        le=MAX_TIMEOUT_S,
        json_schema_extra={"x-hidden": True},
    )
    # true: the command needs the network, so the user is asked (an approved command gets it)
    network: bool = Field(default=False, description="needs network: asks the user")


def effective_timeout(ctx: TurnContext, requested: float | None) -> float:
    return min(requested or ctx.app.settings.shell.timeout_s, MAX_TIMEOUT_S)


@tool(
    "bash",
    BashParams,
    core=True,
    description=(
        "Run a bash command (no stdin); exit code + output. Servers: use serve. "
        "Sandboxed, offline unless approved."
    ),
    risk="exec",
    permission="bash",
    command=lambda p: p.command,
)
async def bash(ctx: TurnContext, p: BashParams) -> ToolResult:
    await save_turn_edits(ctx)  # the command reads the disk: unsaved agent edits go there first
    try:
        grant = call_grant()
        box = await prepare(
            ctx.app.settings, ctx.app.root, network=grant.network, hide_secrets=grant.hide_secrets
        )
    except SandboxRefused as exc:
        raise ToolError(str(exc)) from None
    notes: list[str] = []
    live = output_stream(ctx)  # the editor sees the output while it runs
    proxy = Proxied.start(grant.destinations) if box.prefix and not box.network else None
    # the card's words for what the command ran in (a proxy: only the granted hosts)
    note_sandbox(
        sandbox_label(box.sandboxed, box.network, list(grant.destinations or []) if proxy else None)
    )
    try:
        result = await run_shell(
            p.command,
            cwd=ctx.app.root,
            timeout_s=effective_timeout(ctx, p.timeout_s),
            output_cap=ctx.app.settings.shell.output_cap,
            cancel=ctx.cancelled,
            prefix=[*box.prefix, *proxy.argv] if proxy else box.prefix,
            on_output=live.feed if live else None,
            env=proxy.env if proxy else None,
            pass_fds=proxy.fds if proxy else (),
        )
    except ValueError as exc:
        raise ToolError(str(exc)) from None
    finally:  # also on cancel: every process of the sandbox is dead by now
        notes = await asyncio.shield(box.close())
        if proxy is not None:
            notes += await asyncio.shield(proxy.close())
        if live is not None:
            await live.close()
    text = "\n".join([*box.notes, result.render(), *notes])
    if result.truncated_bytes:
        text += f"\n(output truncated: {result.truncated_bytes} bytes in the middle not shown)"
    data = result.model_dump(exclude={"output"})
    data.update(sandbox=box.state.label(), network=box.network)
    if proxy is not None:
        data["destinations"] = list(grant.destinations or [])
    if result.cancelled:
        return ToolResult(ok=False, content=text, status="cancelled", data=data)
    ok = result.exit_code == 0
    return ToolResult(ok=ok, content=text, status="done" if ok else "failed", data=data)
