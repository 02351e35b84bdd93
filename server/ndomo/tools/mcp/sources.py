"""Where MCP servers come from, and the user's approvals of a project's servers.

- The user's own: `mcp.servers` in the user's config (or the editor's settings, the
  environment) — the user's authority, started without a question.
- A project's: `.mcp.json` (Claude Code's shape) and `mcp.servers` of `.ndomo/config.yaml`,
  read only in a trusted workspace, and started only once the user approved each one. An
  approval is kept per workspace and per exact definition (a fingerprint of what runs):
  a project that changes a server's command, URL, env or network needs a new approval.

Approvals live outside every workspace: `$XDG_DATA_HOME/ndomo/mcp-approvals.json`.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shlex
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ndomo.config import MCP_SERVER_NAME, McpServerConfig, read_project_layer, user_data_dir
from ndomo.trust import key_of
from ndomo.validation import describe

if TYPE_CHECKING:
    from ndomo.app import App

PROJECT_FILE = ".mcp.json"
RECORD_NAME = "mcp-approvals.json"
USER = "user config"
CLIENT = "editor"  # servers the editor passes for its session (ACP `session/new` mcpServers)
NDOMO_PROJECT = ".ndomo/config.yaml"


@dataclass(frozen=True)
class ServerSpec:
    """One configured server: its name, where it was found, and what it runs."""

    name: str
    source: str  # USER, PROJECT_FILE or NDOMO_PROJECT
    config: McpServerConfig

    @property
    def project(self) -> bool:
        """From the project's files: started only once the user approved it."""
        return self.source in (PROJECT_FILE, NDOMO_PROJECT)

    @property
    def network(self) -> bool:
        """Does it reach the network? An http server always; a stdio one when allowed."""
        return self.config.type == "http" or self.config.network == "allow"

    def shown(self) -> str:
        """Exactly what starting it means, for the approval question and `ndomo mcp list`."""
        c = self.config
        if c.type == "http":
            head = f"http {c.url}"
            if c.headers:
                head += f" (headers: {', '.join(sorted(c.headers))})"
            return head
        line = shlex.join([c.command or "", *c.args])
        extras = []
        if c.env:  # names, and the variables of yours a value reads (`${VAR}`)
            shown = [k if "${" not in v else f"{k}={v}" for k, v in sorted(c.env.items())]
            extras.append(f"env: {', '.join(shown)}")
        extras.append("network allowed" if c.network == "allow" else "offline")
        return f"{line} ({'; '.join(extras)})"

    def fingerprint(self) -> str:
        """What an approval is bound to: everything that changes what runs or where it goes."""
        # (its timeout and on/off change nothing it can do; read-only is the user's own word)
        data = self.config.model_dump(exclude={"timeout_s", "enabled", "read_only"})
        text = json.dumps(data, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def _from_claude(name: str, raw: Any) -> McpServerConfig:
    """A `.mcp.json` entry in Claude Code's shape."""
    if not isinstance(raw, dict):
        raise ValueError("must be an object")
    kind = raw.get("type", "stdio" if "command" in raw else "http")
    if kind in ("http", "streamable-http", "streamableHttp"):
        return McpServerConfig(type="http", url=raw.get("url"), headers=raw.get("headers") or {})
    if kind == "sse":
        raise ValueError("the SSE transport is not supported; use the server's streamable HTTP URL")
    if kind != "stdio":
        raise ValueError(f"unknown type {kind!r}")
    return McpServerConfig(
        type="stdio",
        command=raw.get("command"),
        args=raw.get("args") or [],
        env=raw.get("env") or {},
    )


def read_project_file(root: Path) -> tuple[dict[str, McpServerConfig], list[str]]:
    """The servers of `root/.mcp.json`, and one line per entry that does not parse."""
    path = root / PROJECT_FILE
    if not path.is_file():
        return {}, []
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        servers = data.get("mcpServers", {}) if isinstance(data, dict) else None
        if not isinstance(servers, dict):
            raise ValueError("mcpServers is not an object")
    except (OSError, ValueError) as exc:
        return {}, [f"{PROJECT_FILE}: {exc}"]
    out: dict[str, McpServerConfig] = {}
    problems: list[str] = []
    for name, raw in servers.items():
        if not re.match(MCP_SERVER_NAME, str(name)):
            problems.append(f"{PROJECT_FILE}: server name {name!r}: use letters, digits, '-', '_'")
            continue
        try:
            out[name] = _from_claude(name, raw)
        except ValidationError as exc:
            problems.append(f"{PROJECT_FILE}: {name}: {describe(exc)}")
        except ValueError as exc:
            problems.append(f"{PROJECT_FILE}: {name}: {exc}")
    return out, problems


def project_names(root: Path) -> list[str]:
    """The servers `.ndomo/config.yaml` names (as written)."""
    layer = read_project_layer(root)
    servers = (layer.get("mcp") or {}).get("servers") or {}
    return list(servers) if isinstance(servers, dict) else []


def discover(app: App) -> tuple[list[ServerSpec], list[str]]:
    """Every server this workspace may use (blocking: reads files). A project's servers only
    when the folder is trusted; the user's own definition of a name wins over a project's."""
    settings = app.settings.mcp.servers
    own = [] if not app.trust.trusted else project_names(app.root)
    specs: dict[str, ServerSpec] = {}
    for name, config in settings.items():
        # a name the project's config.yaml sets is the project's (merged over the user's)
        source = NDOMO_PROJECT if name in own else USER
        specs[name] = ServerSpec(name, source, config)
    problems: list[str] = []
    if app.trust.trusted:
        found, problems = read_project_file(app.root)
        for name, config in found.items():
            if name not in specs:
                specs[name] = ServerSpec(name, PROJECT_FILE, config)
    return [s for s in specs.values() if s.config.enabled], problems


# -- approvals ----------------------------------------------------------------------------


def record_path() -> Path:
    return user_data_dir() / RECORD_NAME


@dataclass(frozen=True)
class Approval:
    fingerprint: str
    read_only: bool
    shown: str
    at: str


def _read() -> dict[str, dict[str, dict[str, Any]]]:
    try:
        data = json.loads(record_path().read_text(encoding="utf-8"))
        folders = data["workspaces"]
        return folders if isinstance(folders, dict) else {}
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, KeyError, TypeError):
        return {}  # unreadable: nothing is approved (fails closed); approving rewrites it


@contextlib.contextmanager
def _locked() -> Iterator[None]:
    path = record_path()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    with open(path.with_suffix(".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _write(folders: dict[str, Any]) -> None:
    path = record_path()
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".mcp-", suffix=".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(json.dumps({"version": 1, "workspaces": folders}, indent=2, sort_keys=True))
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def approval(root: Path, spec: ServerSpec) -> Approval | None:
    """The user's approval of this exact definition in this workspace (None: none)."""
    entry = _read().get(key_of(root), {}).get(spec.name)
    if not isinstance(entry, dict) or entry.get("fingerprint") != spec.fingerprint():
        return None
    return Approval(
        fingerprint=entry["fingerprint"],
        read_only=bool(entry.get("read_only")),
        shown=str(entry.get("shown", "")),
        at=str(entry.get("at", "")),
    )


def approve(root: Path, spec: ServerSpec, *, read_only: bool = False) -> None:
    with _locked():
        folders = _read()
        folders.setdefault(key_of(root), {})[spec.name] = {
            "fingerprint": spec.fingerprint(),
            "read_only": read_only,
            "shown": spec.shown(),
            "at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        _write(folders)


def revoke(root: Path, name: str) -> bool:
    with _locked():
        folders = _read()
        found = folders.get(key_of(root), {}).pop(name, None) is not None
        if found:
            _write(folders)
        return found
