"""The tool registry: the one door every tool call goes through.

Order of checks, for any name the model sends (offered or not): the mode fence (the turn's
mode contract admits the tool's class or name), argument validation, the call's declared
file changes, guards (mode and agent contracts, the threshold scope), the permission policy,
then the tool; then every guard sees the result. Every refusal is a readable result for the
model; the turn goes on.
"""

from __future__ import annotations

import asyncio
import difflib
import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, get_args

from pydantic import BaseModel, ValidationError

from ndomo.runtime.context import OfferedTool
from ndomo.schema import Schema
from ndomo.validation import describe

if TYPE_CHECKING:
    from ndomo.runtime.context import TurnContext

log = logging.getLogger("ndomo.tools")

Risk = Literal["read", "write", "exec", "network", "plan"]


class ToolResult(Schema):
    ok: bool = True
    content: str = ""
    status: Literal["done", "failed", "refused", "cancelled"] = "done"
    data: dict[str, Any] | None = None
    ends_turn: bool = False  # e.g. handback
    # what the views show beside the result (runtime/callnotes.py): decision, sandbox, files
    details: dict[str, Any] | None = None

    @classmethod
    def refused(cls, message: str) -> ToolResult:
        return cls(ok=False, content=message, status="refused")

    @classmethod
    def failed(cls, message: str) -> ToolResult:
        return cls(ok=False, content=message, status="failed")


ToolFn = Callable[["TurnContext", Any], Awaitable["ToolResult | str"]]
# From a call's validated params: the workspace paths it reads (as the model named them).
PathsOf = Callable[[Any], "list[str] | None"]
# From the turn and a call's validated params: the file changes the call makes (see FileChange).
ChangesOf = Callable[["TurnContext", Any], Awaitable["list[FileChange]"]]
# From a call's validated params: the shell command it starts (None: it starts nothing).
CommandOf = Callable[[Any], "str | None"]

# What a mode's contract admits: each tool belongs to one class, derived from its risk and
# permission unless it says otherwise (`kind=`). A mode names classes (and, rarely, tools).
# `external`: changes outside what ndomo sees or can undo (an MCP server's mutating tools).
ToolKind = Literal[
    "read", "edit", "execute", "network", "plan", "interact", "compose", "commit", "external"
]
# The classes a mode admits when its contract names none: everything without an outside effect
# beyond the workspace files and the plan store.
BASE_KINDS: frozenset[ToolKind] = frozenset({"read", "edit", "plan", "interact", "compose"})
# A tool's own plan step, for guards that follow a turn's planning without naming tools:
# drafts a plan, adds tasks to one, or may start executing one (claims or moves a task or plan).
PlanStep = Literal["drafts_plan", "adds_tasks", "starts_work"]


ChangeKind = Literal["create", "modify", "delete", "move"]


class PathsUnknown(Exception):
    """A tool's declaration failed: which files the call touches is unknown."""


@dataclass(frozen=True)
class FileChange:
    """One file a call changes, as the tool itself will change it.

    `path` is the name the model gave (workspace-relative posix, lexical: what guards judge);
    `file` the confined real path the tool writes (None for a tool that only announces).
    `before`/`after` are the texts (None: absent — created or deleted); a tool that cannot
    give texts gives `lines`, its changed-line count. A move names its new place in `to`
    (its text there is `after`).
    """

    path: str
    kind: ChangeKind
    before: str | None = None
    after: str | None = None
    to: str | None = None
    lines: int | None = None
    file: Path | None = None
    file_to: Path | None = None

    @property
    def paths(self) -> list[str]:
        """The names it touches: its path, and a move's new place."""
        return [self.path, self.to] if self.to and self.to != self.path else [self.path]

    def changed_lines(self) -> int:
        """Lines it adds, removes or rewrites (a rewritten line counts once)."""
        if self.lines is not None:
            return self.lines
        return changed_lines(self.before, self.after)


def changed_lines(before: str | None, after: str | None) -> int:
    """Lines a change adds, removes or rewrites (a rewritten line counts once); CRLF and LF
    line ends are the same line."""
    a = (before or "").splitlines()
    b = (after or "").splitlines()
    n = 0
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag != "equal":
            n += max(i2 - i1, j2 - j1)
    return n


# The changes of the call being dispatched in this task, computed once for every guard and
# the policy: (params, changes or the failure).
_CHANGES: ContextVar[tuple[BaseModel, list[FileChange] | Exception] | None] = ContextVar(
    "ndomo_call_changes", default=None
)


def _kind_of(risk: str, permission: str | None) -> ToolKind:
    if risk == "exec":
        return "execute"
    if risk == "network":
        return "network"
    if risk == "write":
        return "edit"
    if risk == "plan":
        return "plan"
    if permission in ("question", "task"):
        return "interact"
    return "read"


class ToolInfo(OfferedTool, Protocol):
    """What the registry knows of a tool without loading its module: what the model is
    offered, and enough to fence and filter it (`ToolDescriptor`, or a `DeferredTool` until
    its first call)."""

    @property
    def risk(self) -> Risk: ...
    @property
    def permission(self) -> str | None: ...
    @property
    def kind(self) -> ToolKind | None: ...
    @property
    def plan_step(self) -> PlanStep | None: ...
    @property
    def tool_kind(self) -> ToolKind: ...


@dataclass(frozen=True)
class ToolDescriptor:
    name: str
    description: str
    params: type[BaseModel]
    run: ToolFn
    risk: Risk = "read"
    permission: str | None = None  # agent permission key: edit, write, bash, webfetch, …
    core: bool = False  # still offered when a small context window needs a short tool list
    changes: ChangesOf | None = None  # the files a call changes (scope, contracts, secrets, asks)
    read_paths: PathsOf | None = None  # the files a call reads (secret files are asked for)
    command: CommandOf | None = None  # the command a `bash`-permission call starts
    kind: ToolKind | None = None  # the class a mode admits; None: from risk and permission
    plan_step: PlanStep | None = None

    @property
    def tool_kind(self) -> ToolKind:
        return self.kind or _kind_of(self.risk, self.permission)

    async def changed(self, ctx: TurnContext, params: BaseModel) -> list[FileChange] | None:
        """The file changes a call declares; None when the tool declares none. A tool's own
        readable refusal (ToolError: no such file, old_text not found, …) passes through; any
        other failure raises PathsUnknown: callers fail closed (refuse or ask), never skip."""
        if self.changes is None:
            return None
        cached = _CHANGES.get()
        if cached is not None and cached[0] is params:
            if isinstance(cached[1], Exception):
                raise cached[1]
            return cached[1]
        try:
            return list(await self.changes(ctx, params))
        except ToolError:
            raise
        except Exception as exc:  # noqa: BLE001 - a tool's own declaration: any failure is a refusal, never a skipped check
            log.exception("paths of tool %s failed: its changes could not be computed", self.name)
            raise PathsUnknown(
                f"'{self.name}' could not say which files it changes ({type(exc).__name__}: {exc})"
            ) from None

    async def paths(self, ctx: TurnContext, params: BaseModel) -> list[str] | None:
        """The files a call changes, as the model named them (None: it declares none)."""
        found = await self.changed(ctx, params)
        if found is None:
            return None
        return list(dict.fromkeys(p for c in found for p in c.paths))

    def reads(self, params: BaseModel) -> list[str]:
        """The files a call says it reads, as the model named them. A failing declaration
        raises PathsUnknown."""
        if self.read_paths is None:
            return []
        try:
            return [str(p) for p in (self.read_paths(params) or [])]
        except Exception as exc:  # noqa: BLE001 - a tool's own declaration: any failure is a refusal, never a skipped check
            log.exception("read_paths of tool %s failed", self.name)
            raise PathsUnknown(
                f"'{self.name}' could not say which files it reads ({type(exc).__name__}: {exc})"
            ) from None

    def schema(self) -> dict[str, Any]:
        """The parameters as offered to the model: compact (see `compact_schema`), kept
        between processes (`schema_cache`)."""
        from ndomo.runtime import schema_cache

        return schema_cache.schema(
            self.params, lambda: compact_schema(self.params.model_json_schema())
        )


# A feature's tools whose modules load at first need: imports them, returns their descriptors.
ToolLoader = Callable[[], Iterable[ToolDescriptor]]


@dataclass(frozen=True, eq=False)
class DeferredTool:
    """A tool known from the manifest kept with the tool schemas (`schema_cache`), its
    module not imported yet: offered, fenced and filtered by what the manifest says. It is
    never what a call is checked against: the registry loads the tool (`load`) before the
    fence, the guards and the policy see the call (`ToolRegistry.later`)."""

    name: str
    description: str
    params_schema: dict[str, Any] = field(repr=False)
    load: ToolLoader = field(repr=False)
    risk: Risk = "read"
    permission: str | None = None
    core: bool = False
    kind: ToolKind | None = None
    plan_step: PlanStep | None = None

    @property
    def tool_kind(self) -> ToolKind:
        return self.kind or _kind_of(self.risk, self.permission)

    def schema(self) -> dict[str, Any]:
        return self.params_schema


def manifest(tools: Iterable[ToolDescriptor]) -> list[dict[str, Any]]:
    """What `DeferredTool` needs of each tool, as kept in the cache file."""
    return [
        {
            "name": t.name,
            "description": t.description,
            "schema": t.schema(),
            "risk": t.risk,
            "permission": t.permission,
            "core": t.core,
            "kind": t.kind,
            "plan_step": t.plan_step,
        }
        for t in tools
    ]


def _optional(value: Any, allowed: tuple[Any, ...] | type) -> bool:
    if value is None:
        return True
    return isinstance(value, allowed) if isinstance(allowed, type) else value in allowed


def deferred(entries: Any, load: ToolLoader) -> list[DeferredTool] | None:
    """The tools a manifest names, or None when it is not one (a torn or foreign file):
    then the tools are loaded instead."""
    if not isinstance(entries, list):
        return None
    out = []
    for e in entries:
        if not (
            isinstance(e, dict)
            and isinstance(e.get("name"), str)
            and isinstance(e.get("description"), str)
            and isinstance(e.get("schema"), dict)
            and e.get("risk") in get_args(Risk)
            and _optional(e.get("permission"), str)
            and isinstance(e.get("core"), bool)
            and _optional(e.get("kind"), get_args(ToolKind))
            and _optional(e.get("plan_step"), get_args(PlanStep))
        ):
            return None
        out.append(
            DeferredTool(
                name=e["name"],
                description=e["description"],
                params_schema=e["schema"],
                load=load,
                risk=e["risk"],
                permission=e.get("permission"),
                core=e["core"],
                kind=e.get("kind"),
                plan_step=e.get("plan_step"),
            )
        )
    return out


# `Field(json_schema_extra={HIDDEN: True})`: accepted when sent, not offered (rarely needed fields).
HIDDEN = "x-hidden"
# Checked by the registry's validation anyway; to a model they are bytes, not guidance.
_DROP = {
    "title",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "exclusiveMinimum",
    "exclusiveMaximum",
}


def _unoffered(prop: Any) -> bool:
    """An optional field not worth offering: marked HIDDEN, or a free-form object (metadata bags)."""
    if not isinstance(prop, dict):
        return False
    return bool(prop.get(HIDDEN)) or (
        prop.get("type") == "object"
        and prop.get("additionalProperties") is True
        and not prop.get("properties")
    )


def compact_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A JSON schema with only what tells a model how to call: no titles, no null branches
    of optional fields, no `null` defaults, no length limits, `$defs` inlined (some local
    servers' grammar builders cannot follow `$ref`), no descriptions of nested models, and
    optional fields marked HIDDEN or free-form objects not offered at all (still accepted).
    Validation still uses the full pydantic model."""
    defs = schema.get("$defs", {})

    def walk(node: Any, nested: bool = False) -> Any:
        if isinstance(node, list):
            return [walk(n, nested) for n in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            target = defs.get(node["$ref"].rsplit("/", 1)[-1], {})
            merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
            if "description" not in node:
                merged.pop("description", None)  # a model's docstring, not this field's
            return walk(merged, True)
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in _DROP or key == "$defs" or (key == "default" and value is None):
                continue
            if key == "additionalProperties" and value is False:
                continue
            if key == "default":
                continue  # the model leaves the field out to get it
            if key == "minimum" and "maximum" not in node:
                continue  # a bare lower bound (≥0, ≥1) says nothing a name does not
            if key == "properties" and isinstance(value, dict):
                required = set(node.get("required") or ())
                out[key] = {
                    name: walk(v, True)
                    for name, v in value.items()
                    if name in required or not _unoffered(v)
                }
                continue
            if key == HIDDEN:
                continue
            out[key] = walk(value, True)
        branches = out.get("anyOf")
        if isinstance(branches, list):
            kept = [b for b in branches if b != {"type": "null"}]
            if len(kept) == 1:
                out.pop("anyOf")
                out = {**kept[0], **out}
        return out

    return walk(schema)


# Specs per tool set (what an agent in a mode is offered): `model_json_schema()` for ~27
# tools was ~50 ms of every turn, rebuilt although the set rarely changes. Keyed by each
# tool's name, description and params model, so a provider's new or changed tool is a new entry.
_SPECS: dict[tuple, list[Any]] = {}
_SPECS_MAX = 64


def tool_specs(tools: Iterable[OfferedTool]) -> list[Any]:
    """What the model is offered for `tools`: one place, so the schemas are cached here."""
    from ndomo.llm.messages import ToolSpec

    tools = list(tools)
    # what each schema is made from: the parameters model (a deferred tool: the manifest's)
    key = tuple(
        (t.name, t.description, t.params if isinstance(t, ToolDescriptor) else t) for t in tools
    )
    specs = _SPECS.get(key)
    if specs is None:
        if len(_SPECS) >= _SPECS_MAX:
            _SPECS.pop(next(iter(_SPECS)))
        specs = _SPECS[key] = [
            ToolSpec(name=t.name, description=t.description, parameters=t.schema()) for t in tools
        ]
        from ndomo.runtime import schema_cache

        schema_cache.save()
    return list(specs)  # the caller's list; the specs themselves are shared, never mutated


class ToolGuard:
    """A contract check on a call: `check` sees the parsed arguments before the call and
    returns a refusal message or None; `after` sees every result (refusals included) and
    may replace it, e.g. to end the turn."""

    name: str = "guard"

    async def check(self, ctx: TurnContext, tool: ToolDescriptor, params: BaseModel) -> str | None:
        return None

    async def after(
        self, ctx: TurnContext, tool: ToolDescriptor | None, result: ToolResult
    ) -> ToolResult:
        """`tool` is None when the model named no known tool."""
        return result


class PermissionDecision(Schema):
    allowed: bool
    message: str = ""
    failed: bool = (
        False  # the check itself broke (e.g. the editor could not ask): a failure, not a refusal
    )
    # A shell call may use the network (the user approved it, or an agent's `network: allow`
    # rule matched). The OS sandbox reads it through `call_grant()`.
    network: bool = False
    # Run without anyone's approval (`sandbox.auto_allow`): the sandbox shows the
    # workspace's secret files as empty.
    hide_secrets: bool = False
    # `sandbox.destinations`: the only hosts the call may reach (through a proxy in its
    # sandbox); None: `network` decides.
    destinations: list[str] | None = None


_GRANT: ContextVar[PermissionDecision | None] = ContextVar("ndomo_call_grant", default=None)


def call_grant() -> PermissionDecision:
    """The permission decision of the tool call running in this task (nothing extra if none)."""
    return _GRANT.get() or PermissionDecision(allowed=True)


class PermissionPolicy(Protocol):
    def visible(self, ctx: TurnContext, tool: ToolInfo) -> bool: ...

    async def check(
        self, ctx: TurnContext, tool: ToolDescriptor, params: BaseModel
    ) -> PermissionDecision: ...


class AllowAll:
    """The policy when no agent policy is installed (tests of the runtime alone)."""

    def visible(self, ctx: TurnContext, tool: ToolInfo) -> bool:
        return True

    async def check(
        self, ctx: TurnContext, tool: ToolDescriptor, params: BaseModel
    ) -> PermissionDecision:
        return PermissionDecision(allowed=True)


class ModeFence(Protocol):
    """What the fence asks of a mode (a mode's contract): does it admit this tool?"""

    def admits(self, tool: ToolInfo) -> bool: ...


def admitted(tool: ToolInfo, kinds: Iterable[str], names: Iterable[str] = ()) -> bool:
    """A tool is admitted when its class or its name is listed."""
    return tool.tool_kind in kinds or tool.name in names


def fence_message(tool: ToolInfo, mode: str, admitting: Sequence[str]) -> str:
    where = " or ".join(admitting) or "no registered mode"
    return f"tool '{tool.name}' is not available in {mode} mode; switch to {where}"


# Tools that exist per workspace or per turn (e.g. reflexes; next, tools of MCP servers):
# called with the turn's context, cheap and synchronous (refresh caches in a hook). Static
# tools win on a clash.
ToolProvider = Callable[["TurnContext"], Iterable[ToolDescriptor]]


def _fences(ctx: TurnContext) -> dict[str, ModeFence]:
    """Every registered mode's contract, by mode name, in registration order."""
    return ctx.runtime.part(ToolRegistry).fences


def admits(ctx: TurnContext, tool: ToolInfo) -> bool:
    """Does the turn's mode admit `tool`? A mode nobody registered admits the base classes."""
    fence = _fences(ctx).get(ctx.mode)
    return fence.admits(tool) if fence is not None else admitted(tool, BASE_KINDS)


class ToolRegistry:
    def __init__(self) -> None:
        self._tools: dict[str, ToolDescriptor] = {}
        # Known from the manifest, their modules not loaded yet (`later`).
        self._deferred: dict[str, DeferredTool] = {}
        self.guards: list[ToolGuard] = []
        self.policy: PermissionPolicy = AllowAll()
        self.providers: list[ToolProvider] = []
        # each registered mode's contract, by mode name (Plugins.add_mode fills it)
        self.fences: dict[str, ModeFence] = {}

    def add(self, tool: ToolDescriptor) -> None:
        if tool.name in self._tools or tool.name in self._deferred:
            raise ValueError(f"tool {tool.name!r} registered twice")
        self._tools[tool.name] = tool

    def later(self, load: ToolLoader) -> None:
        """Tools whose modules load at their first call. The manifest kept with the tool
        schemas says what they are (name, description, schema, class) for this code;
        without it (a new install, an edit, a torn file) they load now and are remembered."""
        from ndomo.runtime import schema_cache

        key = schema_cache.code_key(load)
        known = deferred(schema_cache.entry(key), load) if key else None
        if known is None:
            tools = self._load(load)
            if key:
                schema_cache.keep(key, manifest(tools))
            return
        for t in known:
            if t.name in self._tools or t.name in self._deferred:
                raise ValueError(f"tool {t.name!r} registered twice")
            self._deferred[t.name] = t

    def _load(self, load: ToolLoader) -> list[ToolDescriptor]:
        """`load`'s tools, in place of what the manifest said of them (kept if it fails)."""
        tools = list(load())
        self._install(load, tools)
        return tools

    def _install(self, load: ToolLoader, tools: list[ToolDescriptor]) -> None:
        for name in [n for n, t in self._deferred.items() if t.load is load]:
            del self._deferred[name]
        for t in tools:
            self.add(t)

    async def _loaded(self, name: str) -> None:
        """A deferred tool's feature loaded before its first call: the imports in a thread (the
        event loop keeps serving the editor and other turns), the registry changed here."""
        found = self._deferred.get(name)
        if found is not None:
            tools = await asyncio.to_thread(lambda: list(found.load()))
            if any(t.load is found.load for t in self._deferred.values()):
                self._install(found.load, tools)  # unless another call's load did meanwhile

    def get(self, name: str) -> ToolDescriptor | None:
        """The tool `name`, loaded."""
        found = self._deferred.get(name)
        if found is not None:
            self._load(found.load)
        return self._tools.get(name)

    def names(self) -> list[str]:
        return sorted([*self._tools, *self._deferred])

    def all(self) -> list[ToolInfo]:
        """Every static tool, as known: loaded or still deferred."""
        known: dict[str, ToolInfo] = {**self._deferred, **self._tools}
        return [known[n] for n in sorted(known)]

    def provided(self, ctx: TurnContext) -> list[ToolDescriptor]:
        """Tools from the providers for this context, minus names a static tool already has."""
        out: dict[str, ToolDescriptor] = {}
        for provider in self.providers:
            for t in provider(ctx):
                if t.name not in self._tools and t.name not in self._deferred and t.name not in out:
                    out[t.name] = t
        return [out[n] for n in sorted(out)]

    def lookup(self, ctx: TurnContext, name: str) -> ToolDescriptor | None:
        """A static tool (loaded), else one a provider offers in this context."""
        found = self.get(name)
        if found is None and self.providers:
            found = next((t for t in self.provided(ctx) if t.name == name), None)
        return found

    def filter(self, ctx: TurnContext) -> list[ToolInfo]:
        """The tools offered to the model for this turn's mode and agent."""
        every: list[ToolInfo] = [*self.all(), *self.provided(ctx)]
        return [t for t in every if admits(ctx, t) and self.policy.visible(ctx, t)]

    def parse(self, tool: ToolDescriptor, raw: Any) -> BaseModel | str:
        if not isinstance(raw, dict):
            return f"arguments for '{tool.name}' must be a JSON object"
        try:
            return tool.params.model_validate(raw)
        except ValidationError as exc:
            return f"invalid arguments for '{tool.name}': {describe(exc)}"

    async def execute(self, ctx: TurnContext, name: str, raw: Any) -> ToolResult:
        try:
            await self._loaded(name)
            tool = self.lookup(ctx, name)
        except Exception as exc:  # noqa: BLE001 - a feature's tool module failed to import: the call fails, the turn goes on
            log.exception("tool %s could not be loaded", name)
            tool = None
            result = ToolResult.failed(
                f"tool '{name}' could not be loaded: {type(exc).__name__}: {exc}"
            )
        else:
            result = await self._dispatch(ctx, name, tool, raw)
        for guard in self.guards:
            try:
                result = await guard.after(ctx, tool, result)
            except Exception:  # noqa: BLE001 - a guard's after-call step: the call already ran; its result stands
                log.exception("guard %s failed after %s", guard.name, name)
        return result

    async def _dispatch(
        self, ctx: TurnContext, name: str, tool: ToolDescriptor | None, raw: Any
    ) -> ToolResult:
        if tool is None:
            offered = ", ".join(t.name for t in ctx.tools) or "none"
            return ToolResult.refused(f"unknown tool '{name}'; available tools: {offered}")
        if not admits(ctx, tool):
            fences = _fences(ctx)
            admitting = [m for m, fence in fences.items() if fence.admits(tool)]
            return ToolResult.refused(fence_message(tool, ctx.mode, admitting))
        params = self.parse(tool, raw)
        if isinstance(params, str):
            return ToolResult.failed(params)
        # The declared changes, once for every guard and the policy. The tool's own refusal
        # (no such file, text not found) ends the call here, before anyone is asked.
        changes: list[FileChange] | Exception | None = None
        try:
            changes = await tool.changed(ctx, params)
        except ToolError as exc:
            return ToolResult.failed(str(exc))
        except PathsUnknown as exc:
            changes = exc
        token = _CHANGES.set((params, changes) if changes is not None else None)
        try:
            return await self._checked(ctx, tool, params)
        finally:
            _CHANGES.reset(token)

    async def _checked(
        self, ctx: TurnContext, tool: ToolDescriptor, params: BaseModel
    ) -> ToolResult:
        name = tool.name
        for guard in self.guards:
            refusal = await guard.check(ctx, tool, params)
            if refusal:
                return ToolResult.refused(refusal)
        decision = await self.policy.check(ctx, tool, params)
        if not decision.allowed:
            if decision.failed:
                return ToolResult.failed(
                    decision.message or f"the permission check for '{name}' failed"
                )
            return ToolResult.refused(decision.message or f"permission denied for '{name}'")
        token = _GRANT.set(decision)
        try:
            result = await tool.run(ctx, params)
        except ToolError as exc:
            return ToolResult.failed(str(exc))
        except Exception as exc:  # noqa: BLE001 - a broken tool is the model's problem to read, not a crash
            log.exception("tool %s failed", name)
            return ToolResult.failed(f"tool '{name}' failed: {type(exc).__name__}: {exc}")
        finally:
            _GRANT.reset(token)
        return result if isinstance(result, ToolResult) else ToolResult(content=str(result))


class ToolError(Exception):
    """A tool's own readable failure (bad path, no match, …)."""


def tool(
    name: str,
    params: type[BaseModel],
    *,
    description: str,
    risk: Risk = "read",
    permission: str | None = None,
    core: bool = False,
    changes: ChangesOf | None = None,
    read_paths: PathsOf | None = None,
    command: CommandOf | None = None,
    kind: ToolKind | None = None,
    plan_step: PlanStep | None = None,
) -> Callable[[ToolFn], ToolDescriptor]:
    """Declare a tool: `@tool("read", ReadParams, description=…)` over `async def f(ctx, p)`."""

    def deco(fn: ToolFn) -> ToolDescriptor:
        return ToolDescriptor(
            name=name,
            description=description,
            params=params,
            run=fn,
            risk=risk,
            permission=permission,
            core=core,
            changes=changes,
            read_paths=read_paths,
            command=command,
            kind=kind,
            plan_step=plan_step,
        )

    return deco
