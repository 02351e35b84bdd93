"""The runtime's permission policy: agent permission → saved approvals → ask the user.

The mode fence has already run (the registry checks it first). Nothing the model sends
can widen a permission: the effective permission comes from the agent files only, and a
delegated turn runs with the intersection of its own and every ancestor's permission.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from ndomo.runtime.callnotes import decided
from ndomo.runtime.host import Approval, ApprovalRequest
from ndomo.runtime.tools import (
    PathsUnknown,
    PermissionDecision,
    ToolDescriptor,
    ToolError,
    ToolInfo,
)
from ndomo.schema import Schema

from .permissions import decide_bash, decide_network, intersect, mcp_allowed, task_allowed
from .schema import STRICTNESS, AgentPermission, BashPolicy, TaskPolicy

if TYPE_CHECKING:
    from ndomo.runtime.context import TurnContext

log = logging.getLogger("ndomo.agents")

FLAT_KEYS = ("edit", "write", "webfetch", "question", "plan_db")


@dataclass
class _Permission:
    """A turn's effective permission, computed once (ctx.instance)."""

    perm: AgentPermission


def effective_permission(ctx: TurnContext) -> AgentPermission:
    """The agent's permission, narrowed by every delegating ancestor (cached per turn)."""
    cached = ctx.existing(_Permission)
    if cached is not None:
        return cached.perm
    # no agent resolved: nothing is granted without asking
    own = ctx.agent.permission if ctx.agent is not None else AgentPermission()
    perm = intersect(effective_permission(ctx.parent), own) if ctx.parent is not None else own
    ctx.instance(_Permission, lambda: _Permission(perm))
    return perm


def mcp_subject(name: str) -> str:
    """`mcp__<server>__<tool>` as the `mcp` permission names it: `<server>/<tool>`."""
    parts = name.split("__", 2)
    return f"{parts[1]}/{parts[2]}" if len(parts) == 3 and parts[0] == "mcp" else name


def glob_escape(subject: str) -> str:
    """A saved approval is an fnmatch pattern; store the exact subject, not a glob."""
    return "".join(f"[{c}]" if c in "*?[" else c for c in subject)


def is_flat_deny(perm: AgentPermission, key: str | None) -> bool:
    """True when the permission refuses every call of this kind (the tool is hidden)."""
    if key in FLAT_KEYS:
        return getattr(perm, key) == "deny"
    if key == "bash":
        bash = perm.bash
        if isinstance(bash, BashPolicy):
            return any(layer == "deny" for layer in bash.layers)
        if isinstance(bash, dict):
            return bool(bash) and all(v == "deny" for v in bash.values()) and "*" in bash
        return bash == "deny"
    if key == "mcp":
        return perm.mcp == "deny"
    if key == "task":
        layers = perm.task.layers if isinstance(perm.task, TaskPolicy) else [perm.task]
        return any(all(v == "deny" for v in layer.values()) for layer in layers)
    return False


def _control_verdict(ctx: TurnContext, tool: ToolDescriptor, paths: list[str]) -> Verdict | None:
    """Writes to the control files: refused (.git/, .ndomo/, plan views) or always asked
    (agent files, config, project instructions), whatever the agent's permission says."""
    from ndomo.security.control import control_kind, real_target, warning

    ask: Verdict | None = None
    for raw in paths:
        real = real_target(raw, ctx.roots)
        if real is None:
            continue  # the tool itself refuses it, with the reason
        rel = real[0]
        kind = control_kind(rel)
        if kind == "plan_view":
            return Verdict(
                action="deny",
                permission="control",
                subject=rel,
                reason="plans change only through the plan tools (plan_update, task_update_status, …); "
                "the .ndomo/plans/ views are rewritten from the store",
            )
        if kind == "denied":
            return Verdict(
                action="deny",
                permission="control",
                subject=rel,
                reason=".git/ and .ndomo/ are never written by agents; the user changes them by hand",
            )
        if kind is not None and ask is None:
            ask = Verdict(
                action="ask",
                permission="control",
                subject=rel,
                reason=warning(rel)
                + " Once, Session or Always approves this one change; nothing is saved.",
            )
    return ask


def _param(params: BaseModel, *names: str) -> str | None:
    for name in names:
        value = getattr(params, name, None)
        if isinstance(value, str) and value:
            return value
    return None


class Verdict(Schema):
    action: str  # allow | ask | deny
    permission: str
    subject: str
    reason: str = ""


class AgentPolicy:
    """`PermissionPolicy` for the runtime: see the module docstring for the order."""

    def visible(self, ctx: TurnContext, tool: ToolInfo) -> bool:
        if ctx.agent is None or tool.permission is None:
            return True
        return not is_flat_deny(effective_permission(ctx), tool.permission)

    async def verdict(self, ctx: TurnContext, tool: ToolDescriptor, params: BaseModel) -> Verdict:
        """What the agent's permission says about this call, before approvals."""
        try:
            return await self._verdict(ctx, tool, params)
        except (PathsUnknown, ToolError) as exc:  # which files it changes is unknown: fail closed
            return Verdict(
                action="deny",
                permission=tool.permission or "paths",
                subject=tool.name,
                reason=str(exc),
            )

    async def _verdict(self, ctx: TurnContext, tool: ToolDescriptor, params: BaseModel) -> Verdict:
        perm = effective_permission(ctx)
        key = tool.permission
        written = await tool.paths(ctx, params) or []  # from the tool's declared changes
        if key is None:
            verdict = Verdict(action="allow", permission="none", subject=tool.name)
        elif key in FLAT_KEYS:
            if key in ("edit", "write"):
                subject = ", ".join(written) or tool.name
            elif key == "webfetch":
                subject = _param(params, "url") or tool.name
            elif key == "question":
                subject = _param(params, "question") or tool.name
            else:
                subject = tool.name
            verdict = Verdict(action=getattr(perm, key), permission=key, subject=subject)
        elif key == "bash":
            command_of = tool.command
            command = command_of(params) if command_of else _param(params, "command")
            if command_of is not None and command is None:
                # the tool declares that this call starts nothing (e.g. serve list/stop)
                return Verdict(action="allow", permission="bash", subject=tool.name)
            if not command:
                return Verdict(
                    action="deny",
                    permission="bash",
                    subject=tool.name,
                    reason=f"'{tool.name}' does not say which command it runs",
                )
            decision = await asyncio.to_thread(
                decide_bash,
                perm,
                command,
                cwd=ctx.app.root,
                roots=ctx.roots,
                secret_globs=ctx.app.settings.secret_globs,
            )
            verdict = Verdict(
                action=decision.action,
                permission="bash",
                subject=command,
                reason=decision.explain(),
            )
        elif key == "mcp":
            subject = mcp_subject(tool.name)
            verdict = Verdict(action=mcp_allowed(perm, subject), permission="mcp", subject=subject)
        elif key == "task":
            agent = _param(params, "agent") or ""
            verdict = Verdict(action=task_allowed(perm, agent), permission="task", subject=agent)
        else:
            verdict = Verdict(
                action="ask",
                permission=key,
                subject=tool.name,
                reason=f"unknown permission '{key}'",
            )
        secrets = [p for p in tool.reads(params) + written if _is_secret(ctx, p)]
        if secrets and STRICTNESS.get(verdict.action, 2) < STRICTNESS["ask"]:
            verdict = Verdict(
                action="ask",
                permission="secret",
                subject=secrets[0],
                reason=f"{secrets[0]} looks like a secret file",
            )
        if written and tool.risk == "write" and verdict.action != "deny":
            control = await asyncio.to_thread(_control_verdict, ctx, tool, written)
            if control is not None:
                verdict = control
        return verdict

    async def check(
        self, ctx: TurnContext, tool: ToolDescriptor, params: BaseModel
    ) -> PermissionDecision:
        v = await self.verdict(ctx, tool, params)
        who = f"{ctx.agent_name} ({ctx.mode})"
        if v.action == "deny":
            why = f": {v.reason}" if v.reason else ""
            return PermissionDecision(
                allowed=False,
                message=f"permission denied: {who} may not use {v.permission} for '{v.subject}'{why}",
            )
        if v.action == "allow" and v.permission == "none":
            return PermissionDecision(allowed=True)
        if v.permission == "control":  # always asked: no saved approval answers for it
            return await self._ask(ctx, v)
        saved = await saved_answer(ctx, v)
        if saved == "deny":
            return PermissionDecision(
                allowed=False,
                message=f"permission denied by a saved rule: {v.permission} '{v.subject}'",
            )
        hosts = await destinations(ctx, tool, v)
        if (v.action == "allow" or saved == "allow") and hosts is not None:
            return PermissionDecision(allowed=True, destinations=hosts)  # those hosts only
        if v.action == "allow" or saved == "allow":
            network = await shell_network(ctx, tool, v, approved=saved == "allow")
            if (
                network is False
                and saved != "allow"
                and getattr(params, "network", False) is True
                and await shell_network(ctx, tool, v, approved=True)
            ):
                # the model asks for network: only the user can give it to an allowed command
                v = v.model_copy(
                    update={"action": "ask", "reason": "the command asks for network access"}
                )
                return await self._ask(ctx, v, tool)
            return PermissionDecision(allowed=True, network=bool(network))
        if await auto_allowed(ctx, tool, v, params, hosts):
            net = "offline" if hosts is None else "reaching only " + ", ".join(hosts)
            # the call's decision line (sandbox.auto_allow): shown live and after a reload
            await decided(ctx, f"auto-allowed (sandboxed, {net})", auto=True)
            return PermissionDecision(allowed=True, hide_secrets=True, destinations=hosts)
        return await self._ask(ctx, v, tool, hosts)

    async def _decided(self, ctx: TurnContext, v: Verdict, answer: Any, rule: str) -> None:
        """The call's decision line for the user's answer (the words the views show)."""
        shown = (rule or v.subject).strip().splitlines()[0][:80] if (rule or v.subject) else ""
        if v.permission == "control" and answer in ("session", "project"):
            answer = "once"  # a control file is approved one change at a time
        if v.permission == "control" and answer == "never":
            answer = "deny"  # nothing is saved for a control file
        text = {
            "once": "approved once by you",
            "session": f"allowed `{shown}` for this session by you",
            "project": f"always allowed `{shown}` in this project by you",
            "never": "denied by you, and from now on in this project",
            "deny": "denied by you",
        }.get(answer if isinstance(answer, str) else "", "denied (the question was dismissed)")
        await decided(ctx, text)

    async def _ask(
        self,
        ctx: TurnContext,
        v: Verdict,
        tool: ToolDescriptor | None = None,
        hosts: list[str] | None = None,
    ) -> PermissionDecision:
        network = await shell_network(ctx, tool, v, approved=True) if tool is not None else None
        if hosts is not None:
            network = False  # sandbox.destinations: those hosts, never the whole network
        sandbox = ""
        if network is not None:
            from ndomo.security.sandbox import current_state

            sandbox = (await current_state(ctx.app.settings)).label()
        rule = v.subject
        if v.permission == "bash":
            proposal: str | None = await asyncio.to_thread(proposed_rule, v.subject)
            rule = proposal or v.subject
        request = ApprovalRequest(
            rule=rule if v.permission != "control" else "",
            permission=v.permission,
            subject=v.subject,
            agent=ctx.agent_name,
            mode=ctx.mode,
            reason=v.reason,
            network=network,
            sandbox=sandbox,
            destinations=hosts or [],
        )
        try:
            answer: Any = await ctx.host.approve(request)
        except Exception as exc:  # noqa: BLE001 - the user said nothing: an error, not a deny
            log.exception("host failed to ask for approval")
            return PermissionDecision(
                allowed=False,
                failed=True,
                message=(
                    f"could not ask the user to approve {v.permission} '{v.subject}': {exc}; "
                    "nothing was run"
                ),
            )
        edited = answer.rule if isinstance(answer, Approval) else None
        answer = answer.choice if isinstance(answer, Approval) else answer
        if answer in ("session", "project") and v.permission != "control":
            pattern = glob_escape(v.subject)
            if (edited or rule) != v.subject:  # Session and Always save the scoped rule
                pattern = (edited or rule).strip()
            if pattern != glob_escape(v.subject) and not await rule_admits(ctx, v, pattern):
                from ndomo.runtime.events import Notice

                await self._decided(ctx, v, "once", pattern)
                await ctx.runtime.emit(
                    ctx,
                    Notice(
                        level="warning",
                        message=f"the rule `{pattern}` does not cover `{v.subject}`: not saved; "
                        "allowed once",
                    ),
                )
                return PermissionDecision(allowed=True, network=bool(network), destinations=hosts)
            await self._decided(ctx, v, answer, pattern)
            store = await ctx.app.store()
            await store.save_approval(
                v.permission,
                pattern,
                "allow",
                scope=answer,
                session_id=ctx.session.id if answer == "session" else None,
            )
            return PermissionDecision(allowed=True, network=bool(network), destinations=hosts)
        await self._decided(ctx, v, answer, rule)
        if answer in (
            "once",
            "session",
            "project",
        ):  # a control file is approved one change at a time
            return PermissionDecision(allowed=True, network=bool(network), destinations=hosts)
        if answer == "never" and v.permission != "control":
            store = await ctx.app.store()
            await store.save_approval(
                v.permission, glob_escape(v.subject), "deny", scope="project", session_id=None
            )
            return PermissionDecision(
                allowed=False,
                message=(
                    f"the user denied {v.permission} '{v.subject}' for this project (a saved "
                    "rule: it will not be asked again); do not retry it — choose another way "
                    "or hand back"
                ),
            )
        return PermissionDecision(
            allowed=False,
            message=(
                f"the user did not approve {v.permission} '{v.subject}' for {ctx.agent_name}; "
                "do not retry the same call — choose another way or hand back"
            ),
        )


async def auto_allowed(
    ctx: TurnContext,
    tool: ToolDescriptor,
    v: Verdict,
    params: BaseModel,
    hosts: list[str] | None = None,
) -> bool:
    """`sandbox.auto_allow`: a shell call the agent would ask about runs without asking
    when bubblewrap confines it and it gets no network (or only the hosts the user's
    `sandbox.destinations` give it). The caller has already refused denials (the agent's
    and saved ones); secret and control files carry their own permission, so they are
    still asked."""
    if not ctx.app.settings.sandbox.auto_allow or v.action != "ask" or v.permission != "bash":
        return False
    if hosts is None and getattr(params, "network", False) is True:
        return False  # the model asks for network: only the user can give it
    if hosts is None and await shell_network(ctx, tool, v, approved=False) is not False:
        return False  # the agent's rules give this command network: not offline
    from ndomo.security.shell import decide

    # only a command ndomo reads whole: every argument literal, inside the workspace, no
    # secret file named, no control file written (what turns an `allow` rule into ask)
    readable = await asyncio.to_thread(
        decide,
        v.subject,
        {"*": "allow"},
        cwd=ctx.app.root,
        roots=ctx.roots,
        secret_globs=ctx.app.settings.secret_globs,
    )
    if readable.action != "allow":
        return False
    from ndomo.security.sandbox import current_state

    state = await current_state(ctx.app.settings)
    # bubblewrap only: Seatbelt has no private loopback, so a served process would get network
    return state.active and state.backend == "bubblewrap"


def proposed_rule(command: str) -> str | None:
    """The scoped rule "Always" proposes for a shell command (`pytest *`), or None."""
    from ndomo.security.shell import decide
    from ndomo.security.shell_rules import scoped_rule

    d = decide(command, "allow")
    return scoped_rule(d.commands) if d.action == "allow" else None


async def rule_admits(ctx: TurnContext, v: Verdict, pattern: str) -> bool:
    """A saved pattern covers this call: its fnmatch matches the subject and, for a shell
    rule with a wildcard, it matches every simple command of the line the way `bash` rules
    do — `pytest *` saved does not admit `pytest x && curl …`, nor a secret or computed
    argument (those stay asked)."""
    from ndomo.store.user import pattern_covers

    if not pattern_covers(pattern, v.subject):
        return False
    if v.permission != "bash":
        return True
    from ndomo.security.shell import decide
    from ndomo.security.shell_rules import has_wildcard

    if not has_wildcard(pattern):
        return True  # an exact command, saved as the user approved it
    d = await asyncio.to_thread(
        decide,
        v.subject,
        {pattern: "allow"},
        cwd=ctx.app.root,
        roots=ctx.roots,
        secret_globs=ctx.app.settings.secret_globs,
    )
    return d.action == "allow"


async def saved_answer(ctx: TurnContext, v: Verdict) -> str | None:
    """'deny', 'allow' or None from the saved approvals; a deny wins."""
    store = await ctx.app.store()
    hits = await store.matching_approvals(v.permission, v.subject, ctx.session.id)
    if any(action == "deny" for _, action in hits):
        return "deny"
    for pattern, action in hits:
        if action == "allow" and await rule_admits(ctx, v, pattern):
            return "allow"
    return None


async def destinations(ctx: TurnContext, tool: ToolDescriptor, v: Verdict) -> list[str] | None:
    """The hosts `sandbox.destinations` gives this shell call (None: no pattern matches)."""
    rules = ctx.app.settings.sandbox.destinations
    if not rules or tool.permission != "bash" or v.permission != "bash":
        return None
    from ndomo.security.destinations import destinations_for

    return await asyncio.to_thread(destinations_for, v.subject, rules)


async def shell_network(
    ctx: TurnContext, tool: ToolDescriptor | None, v: Verdict, *, approved: bool
) -> bool | None:
    """Does this shell call get network inside the OS sandbox? None: not a shell call.

    The agent's `network` permission decides, for `bash` and `serve` alike: allow → yes,
    deny → no, ask → only when the user approved this command (now or by a saved rule).
    """
    if tool is None or tool.permission != "bash" or v.permission != "bash":
        return None
    action = await asyncio.to_thread(
        decide_network,
        effective_permission(ctx),
        v.subject,
        cwd=ctx.app.root,
        roots=ctx.roots,
        secret_globs=ctx.app.settings.secret_globs,
    )
    return action == "allow" or (approved and action != "deny")


def _is_secret(ctx: TurnContext, path: str) -> bool:
    from ndomo.security.paths import is_secret

    try:
        return is_secret(path, ctx.roots, ctx.app.settings.secret_globs)
    except Exception:  # noqa: BLE001 - a secret check that cannot run fails closed
        log.exception("secret check failed for %s", path)
        return True
