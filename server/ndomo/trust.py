"""Workspace trust: whether the user lets a folder configure the agent that reads it.

A repository the user clones must not steer ndomo with the user's authority: until the
user trusts the folder, its `.ndomo/config.yaml` is not read, and its agents
(`.ndomo/agents/`), reflexes (`.ndomo/reflexes/`) and instruction files (AGENTS.md & co.)
are not loaded; a `.ndomo/ndomo.db` ndomo did not create for this user is not resumed.

The record lives outside every workspace, in the user's data directory:
`$XDG_DATA_HOME/ndomo/trust.json` (default `~/.local/share/ndomo/trust.json`), keyed by
the workspace's real path (`os.path.realpath`). Each entry is `trusted` or `untrusted`
(asked, said no); a folder without an entry is `unknown` (never asked). The entry also
keeps the confirmations the user gave for project settings that need one (ndomo.config
`Grant`). Writes are atomic (a temporary file renamed over the record, under a lock); a
record that does not parse is an error that fails closed: every folder is untrusted until
the user fixes or removes the file, and nothing is written over it.

`initializationOptions: {"workspaceTrusted": false}` (VS Code's Restricted Mode) makes a
server session untrusted whatever the record says.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import subprocess
import tempfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from ndomo.config import (
    CONFIG_FILE,
    Grant,
    InstructionsConfig,
    Settings,
    host_of,
    project_needs,
    read_project_layer,
    user_data_dir,
)

TrustState = Literal["trusted", "untrusted", "unknown"]
RECORD_NAME = "trust.json"
SESSION_OPTION = "workspaceTrusted"  # initializationOptions key (VS Code's Restricted Mode)

# Config keys of a project that change security or where the prompt (and a key) goes:
# listed one by one in what a folder configures; the others are counted.
SENSITIVE_KEYS = (
    "model.base_url",
    "model.api_key_env",
    "model.api_key",
    "model.provider",
    "sandbox.mode",
    "sandbox.home",
    "sandbox.writable",
    "sandbox.env_allow",
    "secret_globs",
    "modes.design_globs",
    "modes.default",
    "default_agent",
    "db",
    "instructions.files",
)


class TrustError(Exception):
    """The trust record cannot be read or written; the message says what to do."""


def record_path(env: Mapping[str, str] | None = None) -> Path:
    return user_data_dir(env) / RECORD_NAME


def key_of(root: Path) -> str:
    return os.path.realpath(root)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def read_record(path: Path | None = None) -> dict[str, dict[str, Any]]:
    """`{real path: {"state", "at", "confirmed"}}`; raises TrustError when malformed."""
    path = path or record_path()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise TrustError(f"cannot read the trust record {path}: {exc.strerror or exc}") from None
    try:
        data = json.loads(text)
        folders = data["workspaces"]
        if not isinstance(folders, dict):
            raise TypeError("workspaces is not an object")
        for key, entry in folders.items():
            if not isinstance(entry, dict) or entry.get("state") not in ("trusted", "untrusted"):
                raise ValueError(f"entry {key!r} has no state trusted/untrusted")
            if not all(isinstance(c, str) for c in entry.get("confirmed", [])):
                raise ValueError(f"entry {key!r} has a confirmation that is not a string")
    except (ValueError, KeyError, TypeError) as exc:
        raise TrustError(
            f"the trust record {path} is malformed ({exc}): every folder is untrusted until "
            "you fix or remove it"
        ) from None
    return folders


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    with open(path.with_suffix(".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _update(change: Callable[[dict[str, dict[str, Any]]], None]) -> None:
    """Read, change and atomically replace the record (a malformed one is left alone)."""
    path = record_path()
    with _locked(path):
        folders = read_record(path)
        change(folders)
        text = json.dumps({"version": 1, "workspaces": folders}, indent=2, sort_keys=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".trust-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(text + "\n")
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise


def set_trust(root: Path, trusted: bool, confirmed: list[str] | None = None) -> None:
    """Record the user's answer for `root`; `confirmed` adds confirmations (trusted only).
    Saying no (or revoking) drops every confirmation."""

    def change(folders: dict[str, dict[str, Any]]) -> None:
        key = key_of(root)
        old = folders.get(key, {})
        keep = set(old.get("confirmed", [])) if trusted else set()
        keep |= set(confirmed or []) if trusted else set()
        folders[key] = {
            "state": "trusted" if trusted else "untrusted",
            "at": _now(),
            "confirmed": sorted(keep),
        }

    _update(change)


def list_trust() -> list[tuple[str, str, str]]:
    """(real path, state, when) of every recorded folder, by path."""
    return [
        (key, entry["state"], entry.get("at", "")) for key, entry in sorted(read_record().items())
    ]


@dataclass(frozen=True)
class TrustView:
    """One folder's trust as this process applies it."""

    root: str
    state: TrustState
    grant: Grant = field(default_factory=Grant)
    # Why it is untrusted although the record may say otherwise ("" when it is not).
    note: str = ""

    @property
    def trusted(self) -> bool:
        return self.state == "trusted"


TRUSTED_BY_CALLER = TrustView(root="", state="trusted", grant=Grant(trusted=True))


def session_options(init_options: Any) -> tuple[Any, bool]:
    """(initializationOptions without `workspaceTrusted`, whether the editor says untrusted)."""
    if isinstance(init_options, dict) and SESSION_OPTION in init_options:
        rest = {k: v for k, v in init_options.items() if k != SESSION_OPTION}
        return rest, init_options[SESSION_OPTION] is False
    return init_options, False


def view(root: Path | None, *, restricted: bool = False) -> TrustView:
    """This folder's trust from the record (blocking: a file read)."""
    if root is None:
        return TrustView(root="", state="unknown", note="no workspace folder")
    key = key_of(root)
    try:
        entry = read_record().get(key)
    except TrustError as exc:
        return TrustView(root=key, state="untrusted", note=str(exc))
    if restricted:
        return TrustView(
            root=key,
            state="untrusted",
            note="the editor runs this folder in Restricted Mode: untrusted for this session",
        )
    if entry is None:
        return TrustView(root=key, state="unknown")
    if entry["state"] != "trusted":
        return TrustView(root=key, state="untrusted")
    grant = Grant(trusted=True, confirmed=frozenset(entry.get("confirmed", [])))
    return TrustView(root=key, state="trusted", grant=grant)


# -- what a folder would configure ----------------------------------------------------


def _leaves(d: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(d, dict) and d:
        for k, v in d.items():
            yield from _leaves(v, f"{prefix}.{k}" if prefix else str(k))
    else:
        yield prefix, d


def _config_items(root: Path) -> list[str]:
    if not (root / CONFIG_FILE).is_file():
        return []
    layer = read_project_layer(root)
    out: list[str] = []
    others = 0
    for key, value in _leaves(layer):
        if key in SENSITIVE_KEYS or any(key.startswith(k + ".") for k in SENSITIVE_KEYS):
            shown = "(hidden)" if key == "model.api_key" else json.dumps(value)
            if key == "model.base_url" and isinstance(value, str):
                shown += f" (the model endpoint: prompts and files go to {host_of(value)})"
            out.append(f"config {key}: {shown}")
        elif key:
            others += 1
    if others:
        out.append(f"config: {others} other setting{'s' if others > 1 else ''} in {CONFIG_FILE}")
    return out


def _agent_items(root: Path) -> list[str]:
    from ndomo.agents.loader import builtin_agents_dir, project_agents_dir

    folder = project_agents_dir(root)
    if not folder.is_dir():
        return []
    builtin = {p.stem for p in builtin_agents_dir().glob("*.md")}
    return [
        f"agent {p.stem} ({'replaces the built-in' if p.stem in builtin else 'new'}): "
        f"{p.relative_to(root)}"
        for p in sorted(folder.glob("*.md"))
    ]


def _reflex_items(root: Path) -> list[str]:
    folder = root / ".ndomo" / "reflexes"
    if not folder.is_dir():
        return []
    return [
        f"reflex {p.stem}: {p.relative_to(root)}"
        for p in sorted(folder.iterdir())
        if p.suffix in (".yaml", ".yml")
    ]


def _instruction_items(root: Path, files: list[str]) -> list[str]:
    return [f"instructions: {rel}" for rel in files if (root / rel).is_file()]


def _mcp_items(root: Path) -> list[str]:
    """The MCP servers a project defines (`.mcp.json`, `.ndomo/config.yaml` `mcp.servers`),
    each with exactly what it runs: trusting the folder lets ndomo ask to start them (each
    still needs the user's approval, `ndomo mcp approve --name NAME`)."""
    from ndomo.config import McpServerConfig

    out: list[str] = []
    path = root / ".mcp.json"
    if path.is_file():
        try:
            servers = json.loads(path.read_text(encoding="utf-8")).get("mcpServers", {})
        except (OSError, ValueError, AttributeError):
            servers = None
        if not isinstance(servers, dict):
            out.append("MCP servers: .mcp.json (does not parse)")
            servers = {}
        for name, raw in sorted(servers.items()):
            raw = raw if isinstance(raw, dict) else {}
            runs = raw.get("url") or " ".join(
                str(x) for x in [raw.get("command", "?"), *(raw.get("args") or [])]
            )
            out.append(f"MCP server {name} (.mcp.json, needs your approval): {runs}")
    if (root / CONFIG_FILE).is_file():
        servers = (read_project_layer(root).get("mcp") or {}).get("servers") or {}
        for name, raw in sorted(servers.items()) if isinstance(servers, dict) else []:
            try:
                c = McpServerConfig.model_validate(raw)
            except ValueError:
                continue
            runs = c.url if c.type == "http" else " ".join([c.command or "", *c.args])
            out.append(f"MCP server {name} ({CONFIG_FILE}, needs your approval): {runs}")
    return out


# Each returns the lines of one kind.
PROBES: list[Callable[[Path], list[str]]] = [_config_items, _agent_items, _reflex_items, _mcp_items]


def configures(
    root: Path, settings: Settings | None = None, db_note: str | None = None
) -> list[str]:
    """What the folder would configure if trusted: one line each (blocking: reads files).
    `db_note`: what the caller's App found about the workspace database (None: look)."""
    out: list[str] = []
    for probe in PROBES:
        out.extend(probe(root))
    files = list(InstructionsConfig().files)
    layer = read_project_layer(root) if (root / CONFIG_FILE).is_file() else {}
    project_files = (layer.get("instructions") or {}).get("files")
    for rel in [*(settings.instructions.files if settings else []), *(project_files or [])]:
        if rel not in files:
            files.append(rel)
    out.extend(_instruction_items(root, files))
    note = foreign_db_reason(root) if db_note is None else db_note
    if note:
        out.append(f"database: {note}")
    return out


def needs_confirmation(root: Path, below: Settings | None = None) -> list[Any]:
    """The project settings that apply only with the user's confirmation (`ndomo trust`)."""
    if not (root / CONFIG_FILE).is_file():
        return []
    return project_needs(read_project_layer(root), below or Settings(), root)


# -- databases the user did not create -------------------------------------------------


def git_tracks(root: Path, rel: str) -> bool:
    """Is `rel` committed in the repository at `root`? (a clone brought it)"""
    try:
        done = subprocess.run(
            ["git", "-C", str(root), "ls-files", "--error-unmatch", "--", rel],
            capture_output=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def foreign_db_reason(root: Path, db_rel: str = ".ndomo/ndomo.db") -> str:
    """Why the workspace's database is not this user's own ("" when it is, or is absent):
    committed to git, or not one ndomo created for this folder (copied, shipped)."""
    from ndomo.store.user import created_here

    path = root / db_rel
    if not path.is_file():
        return ""
    if git_tracks(root, db_rel):
        return f"{db_rel} is committed to git: not resumed until you trust the folder"
    if not created_here(key_of(root), path):
        return f"{db_rel} was not created by ndomo for you here: not resumed until you trust the folder"
    return ""
