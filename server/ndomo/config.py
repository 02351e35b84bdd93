"""Settings: defaults < the user's config < the workspace's .ndomo/config.yaml (trusted
workspaces only) < LSP initializationOptions / editor settings < environment.

The user's own config is `$XDG_CONFIG_HOME/ndomo/config.yaml` (default
`~/.config/ndomo/config.yaml`), same schema as the workspace's. A workspace's file is read
only when the user trusted that folder (ndomo.trust), and even then it cannot, without the
user's confirmation recorded with the trust: send the user's API key to a host it names
(a key pairs with the `base_url` of its own side), name another environment variable as the
key, turn the sandbox off or widen `sandbox.home`, drop `secret_globs` or widen
`modes.design_globs`; its `db` stays inside `.ndomo/`.

A bad key never stops the server: that key falls back to its default and the
problem is reported (with the file and line when it came from the YAML file).
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import ConfigDict, Field, ValidationError, field_validator, model_validator

from ndomo.lib import yamlio
from ndomo.schema import Schema
from ndomo.security.defaults import SANDBOX_DEFAULTS

CONFIG_FILE = Path(".ndomo") / "config.yaml"
USER_CONFIG_NAME = "config.yaml"


def user_config_dir(env: Mapping[str, str] | None = None) -> Path:
    """`$XDG_CONFIG_HOME/ndomo` (default `~/.config/ndomo`): the user's own settings."""
    env = os.environ if env is None else env
    base = env.get("XDG_CONFIG_HOME") or ""
    root = Path(base) if os.path.isabs(base) else Path.home() / ".config"
    return root / "ndomo"


def user_data_dir(env: Mapping[str, str] | None = None) -> Path:
    """`$XDG_DATA_HOME/ndomo` (default `~/.local/share/ndomo`): the trust record, the user's
    approvals and the identities of the databases ndomo created — never in a workspace."""
    env = os.environ if env is None else env
    base = env.get("XDG_DATA_HOME") or ""
    root = Path(base) if os.path.isabs(base) else Path.home() / ".local" / "share"
    return root / "ndomo"


def user_config_file(env: Mapping[str, str] | None = None) -> Path:
    return user_config_dir(env) / USER_CONFIG_NAME


# A mode's name: any mode the runtime registered (`setup(plugins)`); checked against that
# registry where it is used (the runtime, the catalog), not here — config loads without it.
ModeName = str


class _Section(Schema):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class Price(_Section):
    """What the model's provider charges, per million tokens (any one currency)."""

    input: float = Field(ge=0, description="per million prompt tokens")
    output: float = Field(ge=0, description="per million completion tokens")
    currency: str = Field(default="$", max_length=8)

    def cost(self, tokens_in: int, tokens_out: int) -> float:
        return (tokens_in * self.input + tokens_out * self.output) / 1_000_000


class ModelConfig(_Section):
    provider: Literal["openai", "anthropic"] = "openai"
    base_url: str = "http://127.0.0.1:11434/v1"
    name: str = "qwen2.5-coder:7b"
    api_key_env: str = "NDOMO_API_KEY"
    api_key: str | None = Field(
        default=None, description="Prefer api_key_env; kept out of reports."
    )
    timeout_s: float = Field(default=120.0, gt=0)
    max_retries: int = Field(default=2, ge=0, le=10)
    temperature: float | None = Field(default=None, ge=0, le=2)
    stream: Literal["auto"] | bool = Field(
        default="auto",
        description="auto: stream, and send again unstreamed when a server cannot stream tool calls.",
    )
    context_window: int | None = Field(
        default=None,
        ge=512,
        description="Tokens the model takes per request; unset: learned from the server.",
    )
    max_output_tokens: int = Field(
        default=8192,
        ge=16,
        description="The most tokens one answer may take (sent as max_tokens, fitted to the "
        "window's room): a whole-file write fits, a model that never stops is cut off.",
    )
    price: Price | None = Field(
        default=None,
        description="Prices per million input/output tokens: the cost is shown with the usage.",
    )

    def resolved_api_key(self, env: Mapping[str, str] | None = None) -> str | None:
        env = os.environ if env is None else env
        return self.api_key or env.get(self.api_key_env) or None


class ModesConfig(_Section):
    # The one place that names the default mode (the default agent: Settings.default_agent).
    default: ModeName = "discussion"
    # Overrides of a mode's own cap (its contract's iteration_cap), by mode name.
    iteration_caps: dict[ModeName, int] = Field(default_factory=dict)
    # `.ndomo/**` and `.git/**` never count, whatever is listed here (security.control)
    design_globs: list[str] = Field(default_factory=lambda: ["**/*.md", "docs/**"])
    discussion_prose_cap: int = Field(default=1200, ge=100)


class Threshold(_Section):
    """A scoped agent's file-count threshold (the one model: the `threshold` settings and an
    agent's own `threshold:` frontmatter): ≤direct files act directly, ≤planned with a plan,
    else refuse."""

    direct: int = Field(default=2, ge=0)
    planned: int = Field(default=5, ge=1)
    direct_lines: int = Field(
        default=50, ge=1, description="State 1 also ends past this many changed lines"
    )

    @model_validator(mode="after")
    def _ordered(self) -> Threshold:
        if self.direct > self.planned:
            raise ValueError(f"direct ({self.direct}) must not exceed planned ({self.planned})")
        return self


class ShellConfig(_Section):
    timeout_s: float = Field(default=120.0, gt=0)
    output_cap: int = Field(default=30_000, ge=1000)


class SandboxConfig(_Section):
    """`sandbox: auto | required | off`, or a map with the mode and the home toolchains."""

    mode: Literal["auto", "required", "off"] = Field(
        default="auto",
        description="auto: sandbox shell commands where bubblewrap/sandbox-exec works; required: refuse them "
        "otherwise; off: no OS sandbox (health warns).",
    )
    home: list[str] = Field(
        default_factory=lambda: list(SANDBOX_DEFAULTS.home_read),
        description="Folders of the home directory a sandboxed command may read (the rest of home is hidden).",
    )
    writable: list[str] = Field(
        default_factory=list,
        description="Folders beside the workspace a sandboxed command may write (e.g. the main repository's "
        ".git of a worktree; without it a worktree's git data is read-only). User settings only.",
    )
    env_allow: list[str] = Field(
        default_factory=list,
        description="Environment variables (names or globs) that reach sandboxed commands although their name "
        "holds KEY, SECRET, TOKEN, PASSWORD or CREDENTIAL. User settings only.",
    )
    destinations: dict[str, list[str]] = Field(
        default_factory=dict,
        description="Command patterns (like `bash` rules) → the only hosts a matching command may reach, "
        "through a proxy in its sandbox: `pypi.org`, `*.pythonhosted.org`, `host:port`, `localhost:5432`. "
        "Such a command gets these instead of no network or the whole network.",
    )
    auto_allow: bool = Field(
        default=False,
        description="Run a shell command the agent would ask about without asking when it runs in a working "
        "bubblewrap sandbox without network (opt-in). Deny rules, saved denials, secret and control files, "
        "and a command that wants network are still asked or refused. Shown in health and the status.",
    )

    @model_validator(mode="before")
    @classmethod
    def _bare_mode(cls, value: Any) -> Any:
        # `sandbox: off` is YAML 1.1's false; `sandbox: required` is shorthand for {mode: required}
        if value is False:
            return {"mode": "off"}
        if isinstance(value, str):
            return {"mode": value}
        return value

    @field_validator("home", "writable")
    @classmethod
    def _absolute(cls, value: list[str]) -> list[str]:
        bad = [p for p in value if not (p.startswith("~/") or p.startswith("/"))]
        if bad:
            raise ValueError(f"{bad[0]!r}: give a path under ~/ or an absolute path")
        return value

    @field_validator("destinations")
    @classmethod
    def _destinations(cls, value: dict[str, list[str]]) -> dict[str, list[str]]:
        from ndomo.security.hosts import check_entries

        for pattern, hosts in value.items():
            if not pattern.strip():
                raise ValueError("an empty command pattern")
            check_entries(hosts)
        return value


class InstructionsConfig(_Section):
    """Project instruction files read into the system prompt."""

    enabled: bool = True
    max_chars: int = Field(
        default=16_000, ge=0, description="Cap on all instruction files together."
    )
    files: list[str] = Field(
        default_factory=lambda: ["AGENTS.md", ".ndomo/instructions.md", "CLAUDE.md"],
        description="Workspace-relative files, read in this order while the cap lasts.",
    )


class MemoryConfig(_Section):
    """Notes (`remember`) brought back into turns."""

    recall: bool = Field(
        default=True, description="Add the notes most relevant to a prompt to its message."
    )
    recall_notes: int = Field(default=3, ge=0, le=20)
    recall_chars: int = Field(
        default=1200, ge=0, description="Budget for the recalled notes in one prompt."
    )


# An MCP server's name: it becomes part of tool names (`mcp__<server>__<tool>`).
MCP_SERVER_NAME = r"^[A-Za-z0-9][A-Za-z0-9-]*(_[A-Za-z0-9-]+)*$"


class McpServerConfig(_Section):
    """One MCP server: a command ndomo starts (stdio, in the OS sandbox) or a URL (http)."""

    type: Literal["stdio", "http"] = "stdio"
    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(
        default_factory=dict,
        description="Variables set for this server only (they pass the secret scrub for it alone).",
    )
    url: str | None = None
    headers: dict[str, str] = Field(
        default_factory=dict,
        description="HTTP headers; `${VAR}` in a value is read from the environment variable VAR.",
    )
    network: Literal["allow", "deny"] = Field(
        default="deny", description="A stdio server's network inside the sandbox (deny: offline)."
    )
    read_only: bool = Field(
        default=False,
        description="Your word that this server only reads: its tools annotated readOnlyHint "
        "are then read-class (offered in discussion).",
    )
    timeout_s: float = Field(default=60.0, gt=0, description="Per tool call.")
    enabled: bool = True
    tools: list[str] | None = Field(
        default=None,
        description="Only these of its tools (names or globs); unset: all. Narrows, never widens.",
    )

    @model_validator(mode="after")
    def _transport(self) -> McpServerConfig:
        if self.type == "stdio" and not self.command:
            raise ValueError("a stdio server needs a command")
        if self.type == "http" and not self.url:
            raise ValueError("an http server needs a url")
        return self


class McpConfig(_Section):
    servers: dict[str, McpServerConfig] = Field(default_factory=dict)
    # MCP tool schemas above this share of the context window are deferred behind mcp_search
    budget_share: float = Field(default=0.25, gt=0, le=1)
    output_cap: int = Field(default=30_000, ge=1000)
    start_timeout_s: float = Field(default=30.0, gt=0)

    @field_validator("servers")
    @classmethod
    def _names(cls, value: dict[str, McpServerConfig]) -> dict[str, McpServerConfig]:
        bad = [n for n in value if not re.match(MCP_SERVER_NAME, n)]
        if bad:
            raise ValueError(f"server name {bad[0]!r}: use letters, digits, '-' and single '_'")
        return value


class Settings(_Section):
    model: ModelConfig = Field(default_factory=ModelConfig)
    db: str = Field(
        default=".ndomo/ndomo.db", description="Plan store file, relative to the workspace."
    )
    default_agent: str = "foreman"
    modes: ModesConfig = Field(default_factory=ModesConfig)
    threshold: Threshold = Field(default_factory=Threshold)
    shell: ShellConfig = Field(default_factory=ShellConfig)
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig)
    instructions: InstructionsConfig = Field(default_factory=InstructionsConfig)
    memory: MemoryConfig = Field(default_factory=MemoryConfig)
    mcp: McpConfig = Field(default_factory=McpConfig)
    secret_globs: list[str] = Field(
        default_factory=lambda: [
            ".env",
            ".env.*",
            "*.pem",
            "*.key",
            "id_rsa*",
            "id_ed25519*",
            "*.p12",
        ]
    )
    history_chars: int = Field(
        default=120_000,
        ge=1000,
        description="Conversation kept across a session's turns; oldest exchanges go first.",
    )
    review_edits: bool = False
    open_transcript: bool = Field(
        default=False,
        description="Show the session's markdown export beside the file after each turn.",
    )
    log_level: Literal["debug", "info", "warning", "error"] = "info"


class ConfigProblem(Schema):
    key: str
    message: str
    source: str
    line: int | None = None  # 0-based, for diagnostics
    column: int | None = None
    end_column: int | None = None

    def describe(self) -> str:
        where = self.source if self.line is None else f"{self.source}:{self.line + 1}"
        return f"{where}: {self.key}: {self.message}"


ENV_KEYS: dict[str, tuple[str, ...]] = {
    "NDOMO_BASE_URL": ("model", "base_url"),
    "NDOMO_MODEL": ("model", "name"),
    "NDOMO_API_KEY": ("model", "api_key"),
    "NDOMO_DB": ("db",),
    "NDOMO_SANDBOX": ("sandbox", "mode"),
}


def _set_path(d: dict, path: tuple[str, ...], value: Any) -> None:
    for part in path[:-1]:
        d = d.setdefault(part, {})
    d[path[-1]] = value


def _delete_path(d: Any, path: tuple[Any, ...]) -> None:
    for part in path[:-1]:
        if not isinstance(d, (dict, list)):
            return
        try:
            d = d[part]
        except (KeyError, IndexError, TypeError):
            return
    if isinstance(d, dict):
        d.pop(path[-1], None)
    elif isinstance(d, list) and isinstance(path[-1], int) and path[-1] < len(d):
        d.pop(path[-1])


def _existing_prefix(d: Any, loc: tuple[Any, ...]) -> tuple[Any, ...]:
    """The longest prefix of a validation error's location that exists in the data."""
    out: list[Any] = []
    for part in loc:
        if (
            isinstance(d, dict)
            and part in d
            or isinstance(d, list)
            and isinstance(part, int)
            and 0 <= part < len(d)
        ):
            d = d[part]
        else:
            break
        out.append(part)
    return tuple(out)


def _merge(base: dict, over: dict) -> dict:
    out = copy.deepcopy(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def _yaml_span(
    node: yaml.Node | None, loc: tuple[Any, ...]
) -> tuple[int | None, int | None, int | None]:
    """(line, column, end column) of a key along loc in the YAML tree: the key itself,
    through the end of its value when that sits on the same line."""
    if node is None:
        return None, None, None
    span = (node.start_mark.line, node.start_mark.column, node.start_mark.column + 1)
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if k.value == str(part):
                    same_line = v.end_mark.line == k.start_mark.line
                    end = v.end_mark.column if same_line else k.end_mark.column + 1
                    span = (k.start_mark.line, k.start_mark.column, end)
                    node = v
                    break
            else:
                return span
        elif (
            isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value)
        ):
            node = node.value[part]
            span = (node.start_mark.line, node.start_mark.column, node.end_mark.column)
        else:
            return span
    return span


def _clean_layer(
    layer: dict, source: str, node: yaml.Node | None, problems: list[ConfigProblem]
) -> dict:
    """Drop every key of one layer that does not validate, recording why."""
    layer = copy.deepcopy(layer)
    for _ in range(100):
        try:
            Settings.model_validate(layer)
            return layer
        except ValidationError as exc:
            for err in exc.errors():
                loc = _existing_prefix(layer, tuple(err["loc"]))
                if not loc:
                    return {}
                key = ".".join(str(p) for p in loc)
                msg = "unknown key" if err["type"] == "extra_forbidden" else err["msg"]
                line, col, end = _yaml_span(node, loc)
                problems.append(
                    ConfigProblem(
                        key=key, message=msg, source=source, line=line, column=col, end_column=end
                    )
                )
                _delete_path(layer, loc)
    return {}


def read_yaml_layer(path: Path, problems: list[ConfigProblem]) -> tuple[dict, yaml.Node | None]:
    if not path.is_file():
        return {}, None
    text = path.read_text(encoding="utf-8", errors="replace")
    try:
        node = yamlio.compose(text)
        data = yamlio.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problems.append(
            ConfigProblem(
                key="(file)",
                message=f"not valid YAML: {getattr(exc, 'problem', exc)}",
                source=str(path),
                line=mark.line if mark else 0,
                column=mark.column if mark else 0,
            )
        )
        return {}, None
    if data is None:
        return {}, node
    if not isinstance(data, dict):
        problems.append(
            ConfigProblem(
                key="(file)",
                message="must be a mapping of keys",
                source=str(path),
                line=0,
                column=0,
            )
        )
        return {}, None
    return data, node


def env_layer(env: Mapping[str, str]) -> dict:
    layer: dict = {}
    for var, path in ENV_KEYS.items():
        if env.get(var):
            _set_path(layer, path, env[var])
    return layer


def _expand_shorthands(layer: dict) -> dict:
    """`sandbox: off` in one layer must not wipe `sandbox.home` set by another."""
    value = layer.get("sandbox")
    if value is False or isinstance(value, str):
        layer = {**layer, "sandbox": {"mode": "off" if value is False else value}}
    return layer


class Grant(Schema):
    """What the user granted one workspace: trust (its `.ndomo/config.yaml` is read) and the
    confirmations recorded with it (ndomo.trust), each naming one project setting that
    needs the user's word: `key:VAR@HOST`, `sandbox.mode=off`, `sandbox.home=[...]`,
    `secret_globs=[...]`, `modes.design_globs=[...]` (values as canonical JSON)."""

    trusted: bool = False
    confirmed: frozenset[str] = frozenset()


UNTRUSTED = Grant()


def confirmation(key: str, value: Any) -> str:
    """The string a confirmation of `key: value` is recorded as."""
    import json

    return f"{key}={json.dumps(value, sort_keys=True)}"


def key_confirmation(var: str, base_url: str) -> str:
    """Confirms that the project's `base_url` host may receive the variable `var`."""
    return f"key:{var}@{host_of(base_url)}"


def host_of(url: str) -> str:
    from urllib.parse import urlsplit

    try:
        return urlsplit(url).netloc or url
    except ValueError:
        return url


class Needs(Schema):
    """A project setting withheld until the user confirms it (`ndomo trust` asks)."""

    key: str
    value: Any
    confirmation: str
    why: str


def _get(d: dict, path: tuple[str, ...]) -> Any:
    for part in path:
        if not isinstance(d, dict) or part not in d:
            return None
        d = d[part]
    return d


# The lists a project may loosen only once the user confirms: each key, and what a
# change to it does — a "+" list loosens by naming more (the items it adds are told), a
# "-" list by naming fewer (the items it drops are told).
_LOOSENING_LISTS: tuple[tuple[str, str, str], ...] = (
    ("sandbox.home", "+", "lets sandboxed commands read {}"),
    ("sandbox.writable", "+", "lets sandboxed commands write {}"),
    ("sandbox.env_allow", "+", "passes these secret-named variables to sandboxed commands: {}"),
    ("secret_globs", "-", "stops treating {} as secrets"),
    ("modes.design_globs", "+", "lets discussion mode write {}"),
)


def _mine(below: Settings, key: str) -> list:
    value: Any = below
    for part in key.split("."):
        value = getattr(value, part)
    return list(value)


def _truthy(value: Any) -> bool:
    """What a bool field makes of `value` (pydantic takes `yes`, `1`, `on`): a project's
    spelling cannot slip a loosening past the gate."""
    from pydantic import TypeAdapter, ValidationError

    try:
        return bool(TypeAdapter(bool).validate_python(value))
    except ValidationError:
        return False  # not a bool: the validation reports it, nothing is applied


def project_needs(project: dict, below: Settings, root: Path) -> list[Needs]:
    """The settings of a (trusted) project's layer that apply only once the user confirms
    them: each loosens what the user's own side set (`below`: defaults < user config)."""
    out: list[Needs] = []
    if _get(project, ("sandbox", "mode")) == "off":
        out.append(
            Needs(
                key="sandbox.mode",
                value="off",
                confirmation=confirmation("sandbox.mode", "off"),
                why="turns the OS sandbox off for shell commands",
            )
        )
    if _truthy(_get(project, ("sandbox", "auto_allow"))) and not below.sandbox.auto_allow:
        out.append(
            Needs(
                key="sandbox.auto_allow",
                value=True,
                confirmation=confirmation("sandbox.auto_allow", True),
                why="runs shell commands without asking whenever they run sandboxed and offline",
            )
        )
    asked_hosts = _get(project, ("sandbox", "destinations"))
    if isinstance(asked_hosts, dict):
        mine_hosts = below.sandbox.destinations
        wider = sorted(
            str(k)
            for k, v in asked_hosts.items()
            if not isinstance(v, list) or not set(map(str, v)) <= set(mine_hosts.get(str(k), []))
        )
        if wider:
            out.append(
                Needs(
                    key="sandbox.destinations",
                    value=asked_hosts,
                    confirmation=confirmation("sandbox.destinations", asked_hosts),
                    why="lets commands matching " + ", ".join(wider) + " reach the network",
                )
            )
    for key, sign, why in _LOOSENING_LISTS:
        asked = _get(project, tuple(key.split(".")))
        if not isinstance(asked, list):
            continue
        theirs, mine = set(map(str, asked)), set(map(str, _mine(below, key)))
        changed = sorted(theirs - mine if sign == "+" else mine - theirs)
        if changed:
            out.append(
                Needs(
                    key=key,
                    value=asked,
                    confirmation=confirmation(key, asked),
                    why=why.format(", ".join(changed)),
                )
            )
    model: dict = project["model"] if isinstance(project.get("model"), dict) else {}
    var = model.get("api_key_env")
    if isinstance(var, str) and var:
        url = model.get("base_url") or below.model.base_url
        out.append(
            Needs(
                key="model.api_key_env",
                value=var,
                confirmation=key_confirmation(var, url),
                why=f"sends ${var} as the API key to {host_of(url)}",
            )
        )
    return out


def _db_inside(value: Any, root: Path) -> bool:
    """A project's `db` must be a file inside the workspace's own `.ndomo/`."""
    if not isinstance(value, str) or not value or value.startswith("~"):
        return False
    path = Path(value)
    if path.is_absolute():
        return False
    state = (root / ".ndomo").resolve()
    return state.is_relative_to(root.resolve()) and (root / path).resolve().is_relative_to(state)


def _gate_project(
    project: dict, below: Settings, root: Path, grant: Grant, source: str, problems: list
) -> dict:
    """The project layer minus what it may not set without the user's confirmation."""
    project = copy.deepcopy(project)
    for need in project_needs(project, below, root):
        if need.confirmation in grant.confirmed or need.key == "model.api_key_env":
            continue  # the key variable is paired (or not) with its host after the merge
        _delete_path(project, tuple(need.key.split(".")))
        problems.append(
            ConfigProblem(
                key=need.key,
                message=f"not applied: it {need.why}; `ndomo trust` asks you to confirm it",
                source=source,
            )
        )
    if "db" in project and not _db_inside(project["db"], root):
        problems.append(
            ConfigProblem(
                key="db",
                message=f"{project['db']!r} is outside this workspace's .ndomo/: refused",
                source=source,
            )
        )
        del project["db"]
    return project


def _pair_key(
    merged: dict,
    base: Settings,
    project: dict,
    higher: list[dict],
    grant: Grant,
    source: str,
    problems: list,
) -> None:
    """The API key goes only to the endpoint configured beside it: a `base_url` from the
    project gets no key of the user's (only a project-named variable the user confirmed
    for that host, or the project's own literal key); a project's `api_key_env` never
    replaces the user's unless confirmed."""
    model = merged.setdefault("model", {})
    pmodel: dict = project["model"] if isinstance(project.get("model"), dict) else {}
    url_from_project = (
        "base_url" in pmodel
        and pmodel["base_url"] != base.model.base_url  # the user's own endpoint, repeated
        and not any("base_url" in (h.get("model") or {}) for h in higher)
    )
    url = model.get("base_url") or ModelConfig().base_url
    var = pmodel.get("api_key_env")
    confirmed = isinstance(var, str) and key_confirmation(var, url) in grant.confirmed
    if url_from_project:
        model["api_key"] = pmodel.get("api_key")
        model["api_key_env"] = var if confirmed else ""
        if not confirmed and not pmodel.get("api_key"):
            problems.append(
                ConfigProblem(
                    key="model.base_url",
                    message=f"set by the project: no API key of yours is sent to {host_of(url)}"
                    + (
                        f" (pairing ${var} with it needs your confirmation: `ndomo trust`)"
                        if var
                        else ""
                    ),
                    source=source,
                )
            )
        return
    if "api_key" in pmodel and not any("api_key" in (h.get("model") or {}) for h in higher):
        model["api_key"] = base.model.api_key  # the project's key is not for this endpoint
    if var and not confirmed and not any("api_key_env" in (h.get("model") or {}) for h in higher):
        model["api_key_env"] = base.model.api_key_env
        problems.append(
            ConfigProblem(
                key="model.api_key_env",
                message=f"set by the project: ${var} is not sent to {host_of(url)} without "
                "your confirmation (`ndomo trust`)",
                source=source,
            )
        )


def load_settings(
    root: Path | None,
    init_options: Any = None,
    env: Mapping[str, str] | None = None,
    client_settings: Any = None,
    *,
    grant: Grant = UNTRUSTED,
    user_config: Path | None = None,
) -> tuple[Settings, list[ConfigProblem]]:
    """Merge the sources (user config < the workspace's config.yaml when `grant.trusted` <
    initializationOptions < the editor's live settings < environment); bad keys fall back
    to defaults and are reported. `user_config`: the user's file (default: the XDG one)."""
    env = os.environ if env is None else env
    problems: list[ConfigProblem] = []
    below: list[dict] = []  # the user's side under the project: defaults < user config
    upath = user_config if user_config is not None else user_config_file()
    data, node = read_yaml_layer(upath, problems)
    below.append(_clean_layer(data, str(upath), node, problems))
    project: dict = {}
    source = ""
    base = _merged(below)
    if root is not None and grant.trusted:
        path = root / CONFIG_FILE
        source = str(path)
        data, node = read_yaml_layer(path, problems)
        project = _expand_shorthands(_clean_layer(data, source, node, problems))
        project = _gate_project(project, base, root, grant, source, problems)
    higher: list[dict] = []
    if init_options is not None:
        if isinstance(init_options, dict):
            higher.append(_clean_layer(init_options, "initializationOptions", None, problems))
        else:
            problems.append(
                ConfigProblem(
                    key="(all)", message="must be an object", source="initializationOptions"
                )
            )
    if client_settings is not None:  # workspace/configuration or didChangeConfiguration
        if isinstance(client_settings, dict):
            higher.append(_clean_layer(client_settings, "editor settings", None, problems))
        else:
            problems.append(
                ConfigProblem(key="(all)", message="must be an object", source="editor settings")
            )
    higher.append(_clean_layer(env_layer(env), "environment", None, problems))
    higher = [_expand_shorthands(h) for h in higher]
    merged: dict = {}
    for layer in [*below, project, *higher]:
        merged = _merge(merged, _expand_shorthands(layer))
    if project:
        _pair_key(merged, base, project, higher, grant, source, problems)
    try:
        settings = Settings.model_validate(merged)
    except ValidationError as exc:  # layers valid alone but not together: keep defaults
        problems.append(ConfigProblem(key="(merged)", message=str(exc), source="configuration"))
        settings = Settings()
    return settings, problems


def _merged(layers: list[dict]) -> Settings:
    merged: dict = {}
    for layer in layers:
        merged = _merge(merged, _expand_shorthands(layer))
    try:
        return Settings.model_validate(merged)
    except ValidationError:
        return Settings()


def read_project_layer(root: Path) -> dict:
    """The workspace's `.ndomo/config.yaml` as written (valid keys only), for listing what
    a folder would configure; never applied from here."""
    problems: list[ConfigProblem] = []
    path = root / CONFIG_FILE
    data, node = read_yaml_layer(path, problems)
    return _expand_shorthands(_clean_layer(data, str(path), node, problems))
