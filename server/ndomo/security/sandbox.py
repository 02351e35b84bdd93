"""The OS sandbox every `bash` command and every `serve`d process runs in.

The permission layer parses commands, but an allowed "harmless" command (`pytest`,
`npm run build`) runs whatever code the workspace holds, so the operating system must
hold the line too. Linux: bubblewrap; macOS: `sandbox-exec` with a generated profile.

The profile (both systems):
- the system is read-only; the workspace is writable except its control files
  (`.git/config`, `.git/hooks/`, `.ndomo/` and a worktree's `.git` pointer file);
- a private `/tmp` (Linux) that does not hide a workspace living under `/tmp`;
- the home directory is hidden except a configurable read-only toolchain list;
- no network unless the call was granted it (the user approved the command, or an agent's
  `network: allow` rule matched); `serve` keeps the host network (its server must be
  reachable on loopback) but keeps the filesystem rules;
- Linux only: new pid/ipc/uts namespaces (no view of, or signals to, host processes),
  capabilities dropped (root in the sandbox cannot remount), `/proc/sys` read-only,
  `/run` replaced (system sockets such as D-Bus or Docker are out of reach).

`sandbox: auto` uses it when it works, `required` refuses shell commands without it,
`off` is the user's explicit opt-out. Availability is tested by running bubblewrap once
with the real flags (it may be installed and still fail, e.g. user namespaces disabled).
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ndomo.schema import Schema

if TYPE_CHECKING:
    from ndomo.config import Settings

log = logging.getLogger("ndomo.sandbox")

SandboxMode = Literal["auto", "required", "off"]
DEFAULT_HOME_READ = [
    "~/.pyenv",
    "~/.rustup",
    "~/.cargo",
    "~/.nvm",
    "~/.local",
    "~/go",
    "~/.npm",
    "~/.cache",
]
SANDBOX_EXEC = "/usr/bin/sandbox-exec"  # absolute: a workspace cannot shadow it on PATH
PROBE_TIMEOUT_S = 30.0  # generous: a loaded machine must not be mistaken for one without a sandbox

# Flags every bubblewrap sandbox gets; the availability probe runs exactly these.
# No --new-session: the runner already starts the sandbox in its own session (no
# controlling terminal to inject into), and a command that stays in that process group is
# what a timeout or a cancel kills. --die-with-parent: the sandbox dies with the server.
BWRAP_BASE = [
    "--ro-bind",
    "/",
    "/",
    "--dev",
    "/dev",
    "--proc",
    "/proc",
    "--ro-bind",
    "/proc/sys",
    "/proc/sys",
    "--unshare-pid",
    "--unshare-ipc",
    "--unshare-uts",
    "--unshare-cgroup-try",
    "--die-with-parent",
    "--cap-drop",
    "ALL",
]


class SandboxRefused(Exception):
    """`sandbox: required` and no working sandbox: the command must not run."""


@dataclass(frozen=True)
class Probe:
    """Whether the platform's sandbox program runs here."""

    backend: str  # "bubblewrap" | "sandbox-exec"
    path: str | None
    ok: bool
    detail: str


class SandboxState(Schema):
    """What `ndomo health` and the approval prompt say about the sandbox."""

    mode: SandboxMode
    backend: str
    active: bool  # shell commands run sandboxed
    ok: bool  # False only when `required` cannot be met
    warning: str = ""
    detail: str = ""

    def label(self) -> str:
        """One short phrase: 'sandboxed (bubblewrap)', 'NOT sandboxed (sandbox: off)' …"""
        if self.active:
            return f"sandboxed ({self.backend})"
        if self.mode == "off":
            return "NOT sandboxed (sandbox: off)"
        if self.mode == "required":
            return f"refused: sandbox required but {self.backend} is unavailable"
        return f"NOT sandboxed ({self.backend} unavailable)"


_probes: dict[str, Probe] = {}


def _backend() -> str:
    return "sandbox-exec" if sys.platform == "darwin" else "bubblewrap"


def _program() -> str | None:
    if sys.platform == "darwin":
        return SANDBOX_EXEC if os.access(SANDBOX_EXEC, os.X_OK) else None
    return shutil.which("bwrap")


async def _run_probe(argv: list[str]) -> tuple[int | None, str]:
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )
    except OSError as exc:
        return None, str(exc)
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), PROBE_TIMEOUT_S)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        return None, f"did not finish within {PROBE_TIMEOUT_S:g}s"
    return proc.returncode, out.decode("utf-8", "replace").strip()


async def probe() -> Probe:
    """Run the sandbox once with the real flags (cached per program path)."""
    backend = _backend()
    path = await asyncio.to_thread(_program)
    if path is None:
        where = SANDBOX_EXEC if backend == "sandbox-exec" else "bwrap on PATH"
        return Probe(backend, None, False, f"{where} not found")
    key = os.path.realpath(path)
    cached = _probes.get(key)
    if cached is not None:
        return cached
    if backend == "sandbox-exec":
        code, out = await _run_probe([path, "-p", "(version 1)(allow default)", "/usr/bin/true"])
        version = ""
    else:
        code, out = await _run_probe(
            [path, *BWRAP_BASE, "--unshare-net", "--tmpfs", "/tmp", "true"]
        )
        version = (await _run_probe([path, "--version"]))[1] if code == 0 else ""
    if code == 0:
        result = Probe(backend, path, True, version or f"{backend} runs")
    else:
        result = Probe(backend, path, False, f"{path} fails here: {out or f'exit {code}'}")
    if code is not None:  # a probe that could not finish is tried again next time
        _probes[key] = result
    return result


async def current_state(settings: Settings) -> SandboxState:
    mode: SandboxMode = settings.sandbox.mode
    if mode == "off":
        return SandboxState(
            mode=mode,
            backend=_backend(),
            active=False,
            ok=True,
            warning="sandbox: off — shell commands and served processes run without an OS sandbox",
        )
    found = await probe()
    if found.ok:
        return SandboxState(
            mode=mode, backend=found.backend, active=True, ok=True, detail=found.detail
        )
    if mode == "required":
        return SandboxState(
            mode=mode,
            backend=found.backend,
            active=False,
            ok=False,
            detail=found.detail,
            warning=f"sandbox: required but {found.detail}: shell commands are refused",
        )
    return SandboxState(
        mode=mode,
        backend=found.backend,
        active=False,
        ok=True,
        detail=found.detail,
        warning=f"{found.detail}: shell commands run without an OS sandbox (install {found.backend})",
    )


# --- the profile -------------------------------------------------------------------------


@dataclass(frozen=True)
class GitLayout:
    """Where a workspace's git data lives (a worktree's lives outside it)."""

    pointer: Path | None  # `.git` when it is a file ("gitdir: …")
    gitdir: Path | None
    common: Path | None


def git_layout(ws: Path) -> GitLayout:
    dotgit = ws / ".git"
    if dotgit.is_dir():
        gitdir = dotgit
        pointer = None
    elif dotgit.is_file():
        pointer = dotgit
        try:
            first = dotgit.read_text(encoding="utf-8", errors="replace").splitlines()[0]
        except (OSError, IndexError):
            return GitLayout(pointer, None, None)
        if not first.startswith("gitdir:"):
            return GitLayout(pointer, None, None)
        gitdir = Path(os.path.realpath(ws / first[len("gitdir:") :].strip()))
        if not gitdir.is_dir():
            return GitLayout(pointer, None, None)
    else:
        return GitLayout(None, None, None)
    common = gitdir
    try:
        ref = (gitdir / "commondir").read_text(encoding="utf-8").strip()
        common = Path(os.path.realpath(gitdir / ref))
    except OSError:
        pass
    return GitLayout(pointer, Path(os.path.realpath(gitdir)), common)


@dataclass(frozen=True)
class Profile:
    """What one sandboxed process may touch. Paths are real (symlinks resolved)."""

    workspace: Path
    writable: tuple[Path, ...]  # beside the workspace: a worktree's git dirs
    read_only: tuple[Path, ...]  # control files inside writable places
    home: Path | None
    home_read: tuple[Path, ...]
    network: bool
    drop_env: tuple[str, ...] = ()
    tmpdir_env: str | None = None  # TMPDIR to set inside (when the host's is not writable there)
    # Files that must not appear, which a mount cannot stop: checked (and removed) after the run
    forbidden_new: tuple[Path, ...] = ()
    # Read-only inside the private /tmp or /run: the interpreter ndomo runs with, when it lives there
    keep_read: tuple[Path, ...] = ()


_PRIVATE_DIRS = ("/tmp", "/run")  # replaced by empty tmpfs folders inside the sandbox


def _real(p: Path | str) -> Path:
    return Path(os.path.realpath(os.path.expanduser(str(p))))


def _inside(child: Path, parent: Path) -> bool:
    return child == parent or parent in child.parents


def build_profile(
    workspace: Path,
    *,
    network: bool,
    home_read: Sequence[str] = DEFAULT_HOME_READ,
    drop_env: Sequence[str] = (),
    env: dict[str, str] | None = None,
) -> Profile:
    """The profile for a workspace. Creates `.ndomo/` (and `.git/hooks/` in a repository)
    when missing, so a sandboxed command cannot create them as its own (an agent file or a
    hook written there would be trusted later, outside the sandbox)."""
    env = dict(os.environ) if env is None else env
    ws = _real(workspace)
    _mkdir(ws / ".ndomo")
    git = git_layout(ws)
    writable: list[Path] = []
    read_only: list[Path] = [ws / ".ndomo"]
    if git.pointer is not None:
        read_only.append(git.pointer)
    for d in dict.fromkeys(x for x in (git.gitdir, git.common) if x is not None):
        writable.append(d)  # a mount point of its own: `mv .git elsewhere` fails (busy)
    if git.common is not None:
        _mkdir(git.common / "hooks")
        read_only += [git.common / "config", git.common / "hooks", git.common / "config.worktree"]
    forbidden: list[Path] = []
    if git.gitdir is not None and git.gitdir != git.common:
        read_only += [
            git.gitdir / "config.worktree",
            git.gitdir / "commondir",
            git.gitdir / "gitdir",
        ]
    elif git.gitdir is not None and not (git.gitdir / "commondir").exists():
        # git reads `<gitdir>/commondir` in any repository and takes config and hooks from where
        # it points; a missing file cannot be mounted read-only, so its creation is undone after
        forbidden.append(git.gitdir / "commondir")
    raw_home = env.get("HOME") or ""
    home = (
        _real(raw_home)
        if raw_home and _real(raw_home) != Path("/") and _real(raw_home).is_dir()
        else None
    )
    reads: list[Path] = []
    for item in home_read:
        text = item.replace("~", raw_home, 1) if item.startswith("~") and raw_home else item
        if os.path.isabs(text):
            reads.append(Path(os.path.normpath(text)))
    # the interpreter that runs ndomo (a static `serve` uses it; a venv on PATH) stays readable
    keep: list[Path] = []
    for prefix in dict.fromkeys(_real(p) for p in (sys.prefix, sys.base_prefix)):
        if home is not None and _inside(prefix, home):
            reads.append(prefix)
        elif any(_inside(prefix, Path(d)) for d in _PRIVATE_DIRS):
            keep.append(prefix)
    tmpdir = env.get("TMPDIR")
    tmpdir_env = None
    if tmpdir and not (_inside(_real(tmpdir), Path("/tmp")) or _inside(_real(tmpdir), ws)):
        tmpdir_env = "/tmp"
    return Profile(
        workspace=ws,
        writable=tuple(writable),
        read_only=tuple(read_only),
        home=home,
        home_read=tuple(dict.fromkeys(reads)),
        network=network,
        drop_env=tuple(drop_env),
        tmpdir_env=tmpdir_env,
        forbidden_new=tuple(forbidden),
        keep_read=tuple(keep),
    )


def _mkdir(path: Path) -> None:
    """Best effort: where ndomo cannot create it, a sandboxed command cannot either."""
    try:
        path.mkdir(exist_ok=True)
    except OSError as exc:
        log.debug("could not create %s: %s", path, exc)


def _depth(p: Path) -> int:
    return len(p.parts)


def _resolv_dir() -> Path | None:
    """Where /etc/resolv.conf really lives when that is under /run (systemd-resolved …)."""
    real = _real("/etc/resolv.conf")
    return real.parent if _inside(real, Path("/run")) and real.parent != Path("/run") else None


def bwrap_argv(bwrap: str, profile: Profile) -> list[str]:
    """bubblewrap's command line (before the command itself).

    Mounts go in order of depth (a parent before what lies inside it), so the private
    /tmp and the hidden home never cover a workspace that lives under them, and the
    read-only control files land on top of the writable workspace.
    """
    mounts: list[tuple[Path, list[str]]] = [(Path("/tmp"), ["--tmpfs", "/tmp"])]
    if os.path.isdir("/run") and not os.path.islink("/run"):
        mounts.append((Path("/run"), ["--tmpfs", "/run"]))
    resolv = _resolv_dir()
    if resolv is not None:
        mounts.append((resolv, ["--ro-bind-try", str(resolv), str(resolv)]))
    if profile.home is not None:
        mounts.append((profile.home, ["--tmpfs", str(profile.home)]))
        for p in profile.home_read:
            mounts.append((p, ["--ro-bind-try", str(p), str(p)]))
    mounts.append((profile.workspace, ["--bind", str(profile.workspace), str(profile.workspace)]))
    for d in profile.writable:
        mounts.append((d, ["--bind", str(d), str(d)]))
    for p in profile.read_only:
        mounts.append((p, ["--ro-bind-try", str(p), str(p)]))
    for p in profile.keep_read:
        mounts.append((p, ["--ro-bind-try", str(p), str(p)]))
    mounts.sort(key=lambda m: _depth(m[0]))  # stable: equal depth keeps the order above
    argv = [bwrap, *BWRAP_BASE]
    if not profile.network:
        argv.append("--unshare-net")
    for _, args in mounts:
        argv += args
    for name in profile.drop_env:
        argv += ["--unsetenv", name]
    if profile.tmpdir_env:
        argv += ["--setenv", "TMPDIR", profile.tmpdir_env]
    argv += ["--setenv", "NDOMO_SANDBOX", "bubblewrap", "--chdir", str(profile.workspace), "--"]
    return argv


_DIR_NAMES = frozenset({"hooks", ".ndomo"})  # read-only folders; the other control files are files


def _sb(path: Path | str) -> str:
    """An SBPL string literal."""
    return '"' + str(path).replace("\\", "\\\\").replace('"', '\\"') + '"'


def seatbelt_profile(
    profile: Profile, tmp_dirs: Sequence[str] = ("/private/tmp", "/private/var/folders")
) -> str:
    """The sandbox-exec (Seatbelt) profile text.

    Everything is allowed by default, then three denies whose filters do not overlap any
    allow, so rule order cannot matter: writes outside the writable places, writes to
    the control files, reads in the hidden home; and the network when not granted.
    """
    writable = [f"(subpath {_sb(profile.workspace)})"]
    writable += [f"(subpath {_sb(d)})" for d in profile.writable]
    writable += [f"(subpath {_sb(t)})" for t in tmp_dirs]
    writable += [
        '(literal "/dev/null")',
        '(literal "/dev/zero")',
        '(literal "/dev/dtracehelper")',
        '(regex #"^/dev/tty")',
        '(regex #"^/dev/fd/")',
    ]
    lines = [
        "(version 1)",
        "(allow default)",
        ";; writes only in the workspace, its git data and the temp folders",
        "(deny file-write* (require-not (require-any",
        *[f"  {w}" for w in writable],
        ")))",
        ";; the control files stay read-only",
        "(deny file-write*",
        *[
            f"  ({'subpath' if p.name in _DIR_NAMES else 'literal'} {_sb(p)})"
            for p in profile.read_only
        ],
        ")",
    ]
    if profile.home is not None:
        visible = [
            f"(subpath {_sb(profile.workspace)})",
            *[f"(subpath {_sb(p)})" for p in profile.home_read],
        ]
        lines += [
            ";; the home folder is hidden except the toolchains",
            f"(deny file-read* (require-all (subpath {_sb(profile.home)}) (require-not (require-any",
            *[f"  {v}" for v in visible],
            "))))",
        ]
    if not profile.network:
        lines += [
            ";; no network",
            '(deny network-outbound (remote ip "*:*"))',
            '(deny network-inbound (local ip "*:*"))',
            '(deny network-bind (local ip "*:*"))',
        ]
    return "\n".join(lines) + "\n"


def seatbelt_argv(profile: Profile) -> list[str]:
    unset = [a for n in profile.drop_env for a in ("-u", n)]
    # no "--": sandbox-exec's usage names none, and the command that follows is /bin/bash
    return [
        "/usr/bin/env",
        *unset,
        "NDOMO_SANDBOX=sandbox-exec",
        SANDBOX_EXEC,
        "-p",
        seatbelt_profile(profile),
    ]


def undo_forbidden(paths: Sequence[Path]) -> list[str]:
    """Remove control files a sandboxed command created where no mount could stop it;
    one line per removal, for the tool result."""
    notes = []
    for p in paths:
        if not (p.exists() or p.is_symlink()):
            continue
        try:
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p)
            else:
                p.unlink()
            notes.append(
                f"ndomo removed {p.name} that the command created in {p.parent}: "
                "it would redirect git's configuration and hooks"
            )
        except OSError as exc:
            notes.append(
                f"WARNING: the command created {p}, which redirects git's configuration; "
                f"ndomo could not remove it ({exc}) — delete it before running git"
            )
    return notes


@dataclass(frozen=True)
class Sandboxed:
    """How to start one process: `prefix` goes before its argv (empty when unsandboxed)."""

    prefix: list[str]
    state: SandboxState
    network: bool
    forbidden_new: tuple[Path, ...] = ()

    async def undo_forbidden(self) -> list[str]:
        """After (or while) the process runs: see `undo_forbidden`."""
        if not self.forbidden_new:
            return []
        return await asyncio.to_thread(undo_forbidden, self.forbidden_new)


def secret_env_names(settings: Settings) -> tuple[str, ...]:
    """ndomo's own model keys: a sandboxed command has no business reading them."""
    names = {"NDOMO_API_KEY", settings.model.api_key_env}
    return tuple(sorted(n for n in names if n))


async def prepare(settings: Settings, workspace: Path, *, network: bool) -> Sandboxed:
    """The sandbox for one shell command or served process in this workspace.

    Raises `SandboxRefused` under `sandbox: required` when no sandbox works here.
    """
    state = await current_state(settings)
    if not state.active:
        if state.mode == "required":
            raise SandboxRefused(
                f"shell commands are refused: the configuration says `sandbox: required` but {state.detail}. "
                f"Install {state.backend} (Debian/Ubuntu: apt-get install bubblewrap) or set `sandbox: auto`."
            )
        return Sandboxed(prefix=[], state=state, network=True)
    profile = await asyncio.to_thread(
        build_profile,
        workspace,
        network=network,
        home_read=settings.sandbox.home,
        drop_env=secret_env_names(settings),
    )
    if state.backend == "sandbox-exec":
        prefix = seatbelt_argv(profile)
    else:
        prefix = bwrap_argv((await probe()).path or "bwrap", profile)
    return Sandboxed(
        prefix=prefix, state=state, network=network, forbidden_new=profile.forbidden_new
    )
