"""`ndomo health`: one report of everything that can be wrong before a turn runs."""

from __future__ import annotations

import asyncio
import logging

from pydantic import ConfigDict, Field

from ndomo import __version__
from ndomo.actions import action
from ndomo.app import App
from ndomo.config import ConfigProblem
from ndomo.features.instructions import InstructionFile
from ndomo.schema import Schema
from ndomo.tools.mcp.actions import McpList, servers_of

log = logging.getLogger("ndomo.features.health")


class HealthParams(Schema):
    model_config = ConfigDict(extra="forbid")
    probe_model: bool = Field(
        default=True, description="Ask the model endpoint whether it answers."
    )


class ConfigHealth(Schema):
    ok: bool
    problems: list[ConfigProblem]


class DatabaseHealth(Schema):
    path: str
    ok: bool
    detail: str


class ModelHealth(Schema):
    provider: str
    url: str
    name: str
    ok: bool | None  # None: not probed
    detail: str
    capabilities: str = (
        ""  # what earlier turns learned (streaming with tools, tools, context window)
    )
    server: str = (
        ""  # what answered the probe, by the endpoint it has ("llama.cpp b1234", "Ollama")
    )
    warnings: list[str] = Field(default_factory=list)


# Tokens of a craftsman autopilot turn's first request (bytes / 3; tests/unit/llm/test_adapt.py
# checks the measured request stays below it). Plus the room kept for the answer.
FIRST_REQUEST_TOKENS = 3400


class AgentProblemInfo(Schema):
    path: str
    line: int | None
    message: str


class AgentsHealth(Schema):
    loaded: int
    names: list[str]
    problems: list[AgentProblemInfo]


class SandboxHealth(Schema):
    mode: str  # auto | required | off
    backend: str
    active: bool  # shell commands run sandboxed
    ok: bool
    state: str  # the phrase the approval prompt shows
    detail: str
    warning: str
    auto_allow: bool = False  # sandbox.auto_allow: sandboxed, offline commands are not asked


class InstructionsHealth(Schema):
    enabled: bool
    max_chars: int
    files: list[InstructionFile]  # each instruction file found, with what went into the prompt


class TrustHealth(Schema):
    state: str  # trusted | untrusted | unknown
    record: str  # the trust record's path (the user's data directory)
    note: str  # why untrusted whatever the record says (Restricted Mode, a malformed record)
    skipped: list[str]  # what the folder configures and is not applied (untrusted)
    database: str  # why the workspace's own database is not used ("" when it is)


class HealthReport(Schema):
    ok: bool
    version: str
    workspace: str
    config: ConfigHealth
    database: DatabaseHealth
    model: ModelHealth
    agents: AgentsHealth
    sandbox: SandboxHealth
    instructions: InstructionsHealth | None = None
    trust: TrustHealth | None = None
    mcp: McpList | None = None


async def _trust(app: App) -> TrustHealth:
    from ndomo.trust import configures, record_path

    skipped: list[str] = []
    if app.has_root and not app.trust.trusted:
        skipped = await asyncio.to_thread(configures, app.root, app.settings, app.db_elsewhere)
    return TrustHealth(
        state=app.trust.state,
        record=str(record_path()),
        note=app.trust.note,
        skipped=skipped,
        database=app.db_elsewhere,
    )


def _render_trust(r: dict) -> list[str]:
    t = r.get("trust")
    if not t:
        return []
    lines = [f"trust     {t['state']}" + (f" ({t['note']})" if t["note"] else "")]
    if t["skipped"]:
        lines.append(f"          skipped until you run `ndomo trust {r['workspace']}`:")
        lines += [f"            - {item}" for item in t["skipped"]]
    if t["database"]:
        lines.append(f"          database: {t['database']}; sessions kept in your data directory")
    return lines


async def _database(app: App) -> DatabaseHealth:
    if app.no_store_reason is not None:  # nothing is created where there is no root
        return DatabaseHealth(path="", ok=False, detail=app.no_store_reason)
    try:
        store = await app.store()
        ok = await store.ping()
        detail = "opens" if ok else "does not answer"
    except Exception as exc:  # noqa: BLE001 - health reports any failure as its answer, never raises
        ok, detail = False, f"{type(exc).__name__}: {exc}"
    return DatabaseHealth(path=str(app.db_path), ok=ok, detail=detail)


async def _model(app: App, probe: bool) -> ModelHealth:
    cfg = app.settings.model
    if not probe:
        return ModelHealth(
            provider=cfg.provider, url=cfg.base_url, name=cfg.name, ok=None, detail="not probed"
        )
    warnings: list[str] = []
    caps_text = server = ""
    try:
        from ndomo.llm.capabilities import Capabilities
        from ndomo.llm.client import make_client

        client = make_client(cfg)
        result = await client.probe()
        ok, detail = result.ok, result.detail
        try:
            store = await app.store()
            saved = await store.model_caps(client.url, cfg.name)
            if saved:
                client.caps = Capabilities.model_validate(saved)
        except Exception:  # noqa: BLE001 - saved capabilities are an extra: health reports what it can
            log.warning("saved model capabilities unreadable", exc_info=True)
        facts = await client.server_facts() if ok and hasattr(client, "server_facts") else {}
        if facts.get("context_window") and not client.caps.context_window:
            client.caps.context_window, client.caps.context_source = (
                facts["context_window"],
                facts["context_source"],
            )
        if hasattr(client, "take_tools"):
            client.take_tools(facts)
        server = str(facts.get("server") or "")
        caps_text = client.caps.describe()
        warnings = _model_warnings(cfg, client.caps, facts)
        await client.aclose()
    except Exception as exc:  # noqa: BLE001 - health reports any failure as its answer, never raises
        ok, detail = False, f"{type(exc).__name__}: {exc}"
    return ModelHealth(
        provider=cfg.provider,
        url=cfg.base_url,
        name=cfg.name,
        ok=ok,
        detail=detail,
        capabilities=caps_text,
        server=server,
        warnings=warnings,
    )


def _model_warnings(cfg, caps, facts: dict) -> list[str]:
    from ndomo.llm.budget import Window

    out = []
    window = cfg.context_window or caps.context_window
    if facts.get("ollama") and window and Window(window, "").input_tokens < FIRST_REQUEST_TOKENS:
        out.append(
            f"Ollama's context for '{cfg.name}' is {window} tokens: too small for a craftsman turn's first request "
            f"(~{FIRST_REQUEST_TOKENS} tokens) plus the answer; Ollama silently cuts longer prompts. Raise it: "
            "OLLAMA_CONTEXT_LENGTH=16384 ollama serve, or a Modelfile with `PARAMETER num_ctx 16384`"
        )
    if caps.tools is False:
        why = f" ({caps.tools_source})" if caps.tools_source else ""
        source = caps.tools_source or ""
        if "--jinja" in source:
            fix = "start llama-server with --jinja"
        elif "chat template" in source:
            fix = (
                "start llama-server with a chat template that renders tools "
                "(--chat-template-file), or a model whose template does"
            )
        else:
            fix = "pick a model with tool support"
        out.append(
            f"model '{cfg.name}' does not support tool calling{why}: discussion answers without "
            f"tools, autopilot refuses; {fix}"
        )
    return out


async def _agents(app: App) -> AgentsHealth:
    from ndomo.agents.loader import load_agents
    from ndomo.runtime.runtime import Runtime

    try:
        modes = Runtime.of(app).plugins.modes
        aset = await asyncio.to_thread(load_agents, app.trusted_root, modes)
    except Exception as exc:  # noqa: BLE001 - health reports any failure as its answer, never raises
        return AgentsHealth(
            loaded=0,
            names=[],
            problems=[
                AgentProblemInfo(
                    path=str(app.root), line=None, message=f"{type(exc).__name__}: {exc}"
                )
            ],
        )
    return AgentsHealth(
        loaded=len(aset.agents),
        names=sorted(aset.agents),
        problems=[
            AgentProblemInfo(path=str(p.path), line=p.line, message=p.message)
            for p in aset.problems
        ],
    )


async def _sandbox(app: App) -> SandboxHealth:
    from ndomo.security.sandbox import current_state

    try:
        st = await current_state(app.settings)
    except Exception as exc:  # noqa: BLE001 - health reports any failure as its answer, never raises
        return SandboxHealth(
            mode=app.settings.sandbox.mode,
            backend="?",
            active=False,
            ok=False,
            state="unknown",
            detail=f"{type(exc).__name__}: {exc}",
            warning="sandbox check failed",
        )
    return SandboxHealth(
        mode=st.mode,
        backend=st.backend,
        active=st.active,
        ok=st.ok,
        state=st.label(),
        detail=st.detail,
        warning=st.warning,
        auto_allow=app.settings.sandbox.auto_allow,
    )


def _sandbox_line(s: dict) -> str:
    mark = "FAIL" if not s["ok"] else ("ok" if s["active"] and not s["warning"] else "WARN")
    line = f"sandbox   {mark}  {s['state']}"
    if f"sandbox: {s['mode']}" not in s["state"]:
        line += f" (sandbox: {s['mode']})"
    if s["active"] and s["detail"]:
        line += f" {s['detail']}"
    if s["warning"]:
        line += f"\n          {s['warning']}"
    if s.get("auto_allow"):
        applies = s["active"] and s["backend"] == "bubblewrap"
        line += "\n          sandbox.auto_allow: on — " + (
            "commands the agent would ask about run without asking when sandboxed and offline"
            if applies
            else "not applied here: it needs a working bubblewrap sandbox"
        )
    return line


async def _instructions(app: App) -> InstructionsHealth:
    from ndomo.features.instructions import read_instructions

    found = await asyncio.to_thread(read_instructions, app)
    return InstructionsHealth(enabled=found.enabled, max_chars=found.max_chars, files=found.files)


def _render_instructions(r: dict) -> str:
    ins = r.get("instructions")
    if not ins:
        return "instructions -"
    if not ins["enabled"]:
        return "instructions off (instructions.enabled: false)"
    if not ins["files"]:
        return f"instructions none found (cap {ins['max_chars']} characters)"
    shown = []
    for f in ins["files"]:
        size = (
            f"{f['chars']} chars"
            if f["used"] == f["chars"]
            else f"{f['used']} of {f['chars']} chars"
        )
        shown.append(f"{f['path']} ({size}{', ' + f['note'] if f['note'] else ''})")
    return f"instructions {', '.join(shown)} (cap {ins['max_chars']})"


def _render_mcp(m: dict | None) -> list[str]:
    if not m or not m["servers"]:
        return []
    lines = []
    for s in m["servers"]:
        tools = "" if s["tools"] is None else f", {s['tools']} tools"
        lines.append(
            f"mcp       {s['name']}: {s['source']}, {s['approved']}, {s['state']}{tools}, "
            f"{s['sandbox']}"
        )
    if m.get("deferred"):
        lines.append("          tool schemas past mcp.budget_share: deferred behind mcp_search")
    return lines


def render_health(r: dict) -> str:
    mark = {True: "ok", False: "FAIL", None: "-"}
    lines = [
        f"ndomo {r['version']}  workspace {r['workspace']}",
        *_render_trust(r),
        f"config    {mark[r['config']['ok']]}",
        *[
            f"          {p['source']}:{(p['line'] or 0) + 1}: {p['key']}: {p['message']}"
            for p in r["config"]["problems"]
        ],
        f"database  {mark[r['database']['ok']]}  {r['database']['path'] or '(none)'} ({r['database']['detail']})",
        f"model     {mark[r['model']['ok']]}  {r['model']['provider']} {r['model']['url']} "
        f"{r['model']['name']} ({r['model']['detail']})",
        *([f"          server: {r['model']['server']}"] if r["model"].get("server") else []),
        *([f"          {r['model']['capabilities']}"] if r["model"].get("capabilities") else []),
        *[f"          warning: {w}" for w in r["model"].get("warnings", [])],
        f"agents    {r['agents']['loaded']} loaded: {', '.join(r['agents']['names'])}",
        *[
            f"          {p['path']}:{(p['line'] or 0) + 1}: {p['message']}"
            for p in r["agents"]["problems"]
        ],
        *([_sandbox_line(r["sandbox"])] if "sandbox" in r else []),
        _render_instructions(r),
        *_render_mcp(r.get("mcp")),
    ]
    return "\n".join(lines)


@action(
    "health",
    HealthParams,
    summary="Version, configuration, database, model and agent checks",
    render=render_health,
    shows_config=True,
    read_only=True,
)
async def health(app: App, params: HealthParams) -> HealthReport:
    servers = asyncio.ensure_future(servers_of(app))  # (gather types six at most)
    db, model, agents, sandbox, instructions, trust = await asyncio.gather(
        _database(app),
        _model(app, params.probe_model),
        _agents(app),
        _sandbox(app),
        _instructions(app),
        _trust(app),
    )
    mcp = await servers
    config = ConfigHealth(ok=not app.config_problems, problems=app.config_problems)
    ok = config.ok and db.ok and model.ok is not False and not agents.problems and sandbox.ok
    return HealthReport(
        ok=ok,
        version=__version__,
        workspace=str(app.root),
        config=config,
        database=db,
        model=model,
        agents=agents,
        sandbox=sandbox,
        instructions=instructions,
        trust=trust,
        mcp=mcp,
    )
