"""The OS sandbox every `bash` command and every `serve`d process runs in.

The permission layer parses commands, but an allowed "harmless" command (`pytest`,
`npm run build`) runs whatever code the workspace holds, so the operating system must
hold the line too. Linux: bubblewrap; macOS: `sandbox-exec` with a generated profile.

The profile (both systems):
- the system is read-only; writable are the workspace and the user's `sandbox.writable`,
  nothing else: a `.git` pointer, symlink or `commondir` (workspace content) never widens
  that — one leading out is followed only to a worktree git links back to, read-only;
- control files at any depth (security.control) are read-only; one a command creates is
  quarantined after it (a mount cannot stop a file that does not exist yet);
- a private `/tmp` (Linux) that does not hide a workspace living under `/tmp`;
- the home directory is hidden except a configurable read-only toolchain list, and the
  credential files inside that list, ndomo's user data and `.ndomo/ndomo.db*` are hidden;
- secret-looking environment variables are removed (`sandbox.env_allow` excepted);
- no network unless the call was granted it (the user approved the command, or an agent's
  `network: allow` rule matched); `serve` and check_page's browser too, their one port
  relayed (security/relay.py);
- Linux only: new pid/ipc/uts namespaces (no view of, or signals to, host processes),
  capabilities dropped (root in the sandbox cannot remount), `/proc/sys` read-only,
  `/run` replaced (system sockets such as D-Bus or Docker are out of reach).

`sandbox: auto` uses it when it works, `required` refuses shell commands without it,
`off` is the user's explicit opt-out. Availability is tested by running bubblewrap once
with the real flags (it may be installed and still fail, e.g. user namespaces disabled).
"""

from __future__ import annotations

import asyncio
import fnmatch
import logging
import os
import re
import shutil
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ndomo.schema import Schema
from ndomo.security import spawn
from ndomo.security.control import CONTROL_DIRS, CONTROL_ENTRY_POINTS, CONTROL_FILES, GIT_CONTROL
from ndomo.security.defaults import SANDBOX_DEFAULTS

if TYPE_CHECKING:
    from ndomo.config import Settings

log = logging.getLogger("ndomo.sandbox")

SandboxMode = Literal["auto", "required", "off"]
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
        proc = await spawn.start(argv)
    except OSError as exc:
        return None, str(exc)
    try:
        out = await asyncio.wait_for(proc.communicate(), PROBE_TIMEOUT_S)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        proc.close_output()
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
    """Where a workspace's git data lives, as far as the sandbox trusts it.

    Only the workspace's own `.git` folder, or a worktree's git dirs that git itself links
    back to this workspace, count: a `.git` pointer, symlink or `commondir` is a file any
    sandboxed command can write, so what it names outside the workspace is never trusted
    to widen the sandbox (`refused` says what was ignored and why)."""

    pointer: Path | None  # `.git` when it is a file ("gitdir: …")
    gitdir: Path | None
    common: Path | None
    refused: tuple[str, ...] = ()


def _read_first_line(path: Path) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.readline(4096).strip()
    except OSError:
        return None


def git_layout(ws: Path, trusted: Sequence[Path] = ()) -> GitLayout:
    """`trusted`: the user's `sandbox.writable` folders; a `.git` pointer into one (a
    submodule's `.git/modules/…`, a worktree's) is followed like a worktree's."""
    ws = _real(ws)
    dotgit = ws / ".git"
    refused: list[str] = []
    pointer: Path | None = None
    gitdir: Path | None = None
    if dotgit.is_symlink():
        target = _real(dotgit)
        if _inside(target, ws) and target.is_dir():
            gitdir = target
        else:
            refused.append(
                f".git is a symlink to {target}, outside the workspace: ndomo mounts nothing for it"
            )
    elif dotgit.is_dir():
        gitdir = dotgit
    elif dotgit.is_file():
        pointer = dotgit
        first = _read_first_line(dotgit) or ""
        if first.startswith("gitdir:"):
            target = _real(ws / first[len("gitdir:") :].strip())
            named = any(_inside(target, t) for t in trusted) and target.is_dir()
            if (_inside(target, ws) and target.is_dir()) or named or _worktree_of(target, dotgit):
                gitdir = target
            else:
                refused.append(
                    f".git points to {target}, which is not a git worktree folder of this workspace: "
                    "ndomo mounts nothing for it"
                )
    if gitdir is None:
        return GitLayout(pointer, None, None, tuple(refused))
    common = gitdir
    ref = _read_first_line(gitdir / "commondir")
    if ref:
        target = _real(gitdir / ref)
        # a worktree's git dir is <common>/worktrees/<name>, and git wrote its commondir; a
        # commondir anywhere else was planted (or copied) and names config and hooks git obeys
        if target == gitdir:
            pass  # "." (ndomo's placeholder): the git dir itself, no redirection
        elif not _inside(gitdir, ws) and gitdir.parent.parent == target and target.is_dir():
            common = target
        else:
            refused.append(
                f"{gitdir / 'commondir'} redirects git to {target}: ignored (ndomo removes it)"
            )
    return GitLayout(pointer, gitdir, common, tuple(refused))


def _worktree_of(gitdir: Path, pointer: Path) -> bool:
    """Is `gitdir` a worktree git dir whose back-link (written by `git worktree add`) names
    this very `.git` file? A sandboxed command cannot forge that file outside the workspace."""
    if not gitdir.is_dir() or gitdir.parent.name != "worktrees":
        return False
    back = _read_first_line(gitdir / "gitdir")
    return bool(back) and _real(back or "") == _real(pointer)


DEFAULT_HOME_READ = SANDBOX_DEFAULTS.home_read


@dataclass(frozen=True)
class Profile:
    """What one sandboxed process may touch. Paths are real (symlinks resolved)."""

    workspace: Path
    writable: tuple[Path, ...]  # beside the workspace: a worktree's git dirs the user made writable
    read_only: tuple[Path, ...]  # control files inside writable places
    home: Path | None
    home_read: tuple[Path, ...]
    network: bool
    drop_env: tuple[str, ...] = ()
    tmpdir_env: str | None = None  # TMPDIR to set inside (when the host's is not writable there)
    # control files that may appear and a mount cannot stop: compared after the run (see Controls)
    controls: Controls | None = None
    # Read-only inside the private /tmp or /run: the interpreter ndomo runs with, when it lives there
    keep_read: tuple[Path, ...] = ()
    # beside the workspace, read-only: a worktree's git dirs (not listed in `sandbox.writable`)
    outside_read: tuple[Path, ...] = ()
    hidden_files: tuple[
        Path, ...
    ] = ()  # shown as empty (/dev/null): secrets inside readable places
    hidden_dirs: tuple[Path, ...] = ()  # an empty read-only folder in their place
    notes: tuple[str, ...] = ()  # what the profile refused, for the tool result
    placeholders: tuple[Path, ...] = ()  # held for this run: release with release_placeholders
    # each `.ndomo/` as a read-only snapshot of its names: its entries but the database files,
    # and nothing created after the start (the database's -wal appears and goes)
    ndomo_views: tuple[tuple[Path, tuple[Path, ...]], ...] = ()


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
    writable_roots: Sequence[str] = (),
    hide_secrets: Sequence[str] | None = None,
) -> Profile:
    """The profile for a workspace. Creates `.ndomo/` (and `.git/hooks/` in a repository)
    when missing, so a sandboxed command cannot create them as its own (an agent file or a
    hook written there would be trusted later, outside the sandbox).

    What is writable comes from the workspace's real path and the user's `writable_roots`
    only: a `.git` pointer, symlink or `commondir` (files any command can write) never widens
    it; a worktree's git dirs beside the workspace are read-only unless the user listed them."""
    env = dict(os.environ) if env is None else env
    ws = _real(workspace)
    _mkdir(ws / ".ndomo")
    raw_home = env.get("HOME") or ""
    user_writable = [
        _real(r.replace("~", raw_home, 1) if r.startswith("~") else r) for r in writable_roots
    ]
    git = git_layout(ws, user_writable)
    writable: list[Path] = []
    outside: list[Path] = []
    read_only: list[Path] = [ws / ".ndomo"]
    if git.pointer is not None:
        read_only.append(git.pointer)
    for d in dict.fromkeys(x for x in (git.gitdir, git.common) if x is not None):
        if _inside(d, ws) or any(_inside(d, r) for r in user_writable):
            writable.append(d)  # a mount point of its own: `mv .git elsewhere` fails (busy)
        else:
            outside.append(d)
    if git.common is not None and git.common not in outside:
        _mkdir(git.common / "hooks")
        read_only += [git.common / "config", git.common / "hooks", git.common / "config.worktree"]
    if git.gitdir is not None and git.gitdir != git.common and git.gitdir not in outside:
        read_only += [
            git.gitdir / "config.worktree",
            git.gitdir / "commondir",
            git.gitdir / "gitdir",
        ]
    notes = list(git.refused)
    planted = git.gitdir / "commondir" if git.gitdir is not None else None
    # git reads `<gitdir>/commondir` in any repository and takes config and hooks from where
    # it points: a planted one is removed before the run
    in_ws = planted is not None and git.common == git.gitdir and _inside(planted, ws)
    if planted is not None and in_ws and _planted(planted):
        notes += _quarantine([planted], ws, "before the run")
    controls = scan_controls(ws)
    # ...and none can be created during it: a read-only placeholder saying "." (the common
    # dir is the git dir itself, which git reads as usual) while any sandbox runs here
    gitdirs = [p for p in controls.found if p.name == ".git" and p.is_dir() and not p.is_symlink()]
    if planted is not None and _inside(planted, ws) and planted.parent not in gitdirs:
        gitdirs.append(planted.parent)
    # an editor acts on a new `.vscode/settings.json` at once (ndomo.server.command runs code
    # outside the sandbox): the root's cannot be created either, an empty read-only folder
    # stands there while a sandbox runs (the after-run check covers the nested ones)
    held = hold_placeholders([g / "commondir" for g in gitdirs], dirs=[ws / ".vscode"])
    controls = replace(
        controls,
        found=controls.found | frozenset(held),
        protect=tuple(dict.fromkeys([*controls.protect, *held])),
    )
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
    hidden_files, hidden_dirs = _hidden(ws, raw_home, reads, controls, env)
    if hide_secrets is not None:  # a command nobody approved: the workspace's secrets read empty
        files, dirs = scan_secrets(ws, hide_secrets)
        hidden_files += files
        hidden_dirs += dirs
    tmpdir = env.get("TMPDIR")
    tmpdir_env = None
    if tmpdir and not (_inside(_real(tmpdir), Path("/tmp")) or _inside(_real(tmpdir), ws)):
        tmpdir_env = "/tmp"
    return Profile(
        workspace=ws,
        writable=tuple(writable),
        read_only=tuple(
            p
            for p in dict.fromkeys([*read_only, *controls.protect])
            if p not in controls.ndomo_dirs
        ),
        home=home,
        home_read=tuple(dict.fromkeys(reads)),
        network=network,
        drop_env=tuple(drop_env),
        tmpdir_env=tmpdir_env,
        controls=controls,
        keep_read=tuple(keep),
        outside_read=tuple(outside),
        hidden_files=hidden_files,
        hidden_dirs=hidden_dirs,
        notes=tuple(notes),
        placeholders=held,
        ndomo_views=_ndomo_views(controls),
    )


_PLACEHOLDER = ".\n"
_held: dict[Path, int] = {}  # placeholder -> sandboxes using it (any thread)
_held_lock = threading.Lock()


def _planted(path: Path) -> bool:
    """Is this `commondir` someone else's (to quarantine)? Ours, held by a running sandbox,
    is not; ours left by a run that never ended (the server was killed) is removed."""
    with _held_lock:
        if path in _held or not os.path.lexists(path):
            return False
        try:
            leftover = not path.is_symlink() and path.read_text(encoding="utf-8") == _PLACEHOLDER
            if leftover:
                path.unlink()
        except OSError:
            return True
        return not leftover


def hold_placeholders(files: Sequence[Path], dirs: Sequence[Path] = ()) -> tuple[Path, ...]:
    """Placeholders where a control file must not appear: a `commondir` saying "." for
    `files`, an empty folder for `dirs`; made by ndomo on the host where none exists, bound
    read-only into the sandbox, counted so concurrent sandboxes share them."""
    held: list[Path] = []
    with _held_lock:
        for path, folder in [*((f, False) for f in files), *((d, True) for d in dirs)]:
            if path in _held:
                _held[path] += 1
                held.append(path)
                continue
            try:
                if folder:
                    path.mkdir()
                else:
                    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                    with os.fdopen(os.open(path, flags, 0o644), "w", encoding="utf-8") as f:
                        f.write(_PLACEHOLDER)
            except OSError:
                continue  # one exists (protected read-only as found) or none can be made
            _held[path] = 1
            held.append(path)
    return tuple(held)


def release_placeholders(paths: Sequence[Path]) -> None:
    """The last sandbox using a placeholder is done: remove it if it is still ours (a
    folder the user put files in meanwhile stays)."""
    with _held_lock:
        for path in paths:
            left = _held.get(path, 0) - 1
            if left > 0:
                _held[path] = left
                continue
            _held.pop(path, None)
            try:
                if path.is_symlink():
                    continue
                if path.is_dir():
                    path.rmdir()
                elif path.read_text(encoding="utf-8") == _PLACEHOLDER:
                    path.unlink()
            except OSError as exc:
                log.info("left the placeholder %s: %s", path, exc)


def _hidden(
    ws: Path, raw_home: str, reads: Sequence[Path], controls: Controls, env: dict[str, str]
) -> tuple[tuple[Path, ...], tuple[Path, ...]]:
    """Secrets inside places a command may read: credential files in the readable home
    folders, ndomo's own user data (trust record, approvals) and each `.ndomo/ndomo.db*`."""
    files: list[Path] = []
    dirs: list[Path] = []
    candidates: list[Path] = []
    if raw_home:
        candidates += [Path(raw_home) / rel for rel in SANDBOX_DEFAULTS.hidden_in_home]
    data_home = env.get("XDG_DATA_HOME") or (f"{raw_home}/.local/share" if raw_home else "")
    if data_home:
        candidates.append(Path(data_home) / "ndomo")
    visible = [*reads, ws]
    for c in candidates:
        if not any(_inside(Path(os.path.normpath(c)), r) for r in visible):
            continue  # hidden already (the home is a tmpfs) or outside every readable place
        if c.is_dir():
            dirs.append(c)
        elif c.exists():
            files.append(c)
    return tuple(dict.fromkeys(files)), tuple(dict.fromkeys(dirs))


def scan_secrets(ws: Path, globs: Sequence[str]) -> tuple[tuple[Path, ...], tuple[Path, ...]]:
    """The workspace's files and folders matching `secret_globs` (gitignore semantics, like
    `paths.is_secret`), as (files, folders), real paths. The walk skips the folders the
    control scan skips and stops after `control_dirs_cap` folders, like it."""
    from ndomo.security.paths import is_secret

    ws = _real(ws)
    files: list[Path] = []
    dirs: list[Path] = []
    seen = 0
    for top, names, filenames in os.walk(ws):
        here = Path(top)
        keep = []
        for n in names:
            p = here / n
            if n in _NO_DESCENT or os.path.islink(p):
                continue
            if is_secret(p, [ws], globs):
                dirs.append(p)
            else:
                keep.append(n)
        names[:] = keep
        for n in filenames:
            p = here / n
            if not os.path.islink(p) and is_secret(p, [ws], globs):
                files.append(p)
        seen += 1
        if seen >= SANDBOX_DEFAULTS.control_dirs_cap:
            log.info("secret scan of %s stopped after %d folders", ws, seen)
            break
    return tuple(files), tuple(dirs)


def _ndomo_views(controls: Controls) -> tuple[tuple[Path, tuple[Path, ...]], ...]:
    views = []
    for d in controls.ndomo_dirs:
        try:
            entries = tuple(
                Path(e.path)
                for e in os.scandir(d)
                if not e.name.startswith("ndomo.db") and not e.is_symlink()
            )
        except OSError:
            entries = ()
        views.append((d, entries))
    return tuple(views)


# --- control files at any depth ------------------------------------------------------------

_NO_DESCENT = frozenset(
    {".git", "node_modules", ".venv", "venv", "__pycache__", ".tox", ".mypy_cache"}
)


@dataclass(frozen=True)
class Controls:
    """The workspace's control files (security.control) as found before a run, to depth
    `SANDBOX_DEFAULTS.control_depth`: the existing ones are mounted read-only; one that
    appears during the run (a mount cannot stop a file that does not exist yet) is moved
    to `.ndomo/quarantine/` after it and reported."""

    workspace: Path
    found: frozenset[Path]
    protect: tuple[Path, ...]  # existing, not symlinks: read-only binds
    ndomo_dirs: tuple[Path, ...]


def _control_entries(d: Path) -> list[Path]:
    out = [d / n for n in (*CONTROL_DIRS, *CONTROL_FILES, *CONTROL_ENTRY_POINTS, ".git")]
    dotgit = d / ".git"
    if dotgit.is_dir() and not dotgit.is_symlink():
        out += [dotgit / n for n in GIT_CONTROL]
    return [p for p in out if os.path.lexists(p)]


def scan_controls(ws: Path) -> Controls:
    ws = _real(ws)
    found: list[Path] = []
    level = [ws]
    seen = 0
    for depth in range(SANDBOX_DEFAULTS.control_depth + 1):
        below: list[Path] = []
        for d in level:
            found += _control_entries(d)
            if depth == SANDBOX_DEFAULTS.control_depth:
                continue
            try:
                with os.scandir(d) as it:
                    for e in it:
                        if e.name in _NO_DESCENT or e.name in CONTROL_DIRS:
                            continue
                        if e.is_dir(follow_symlinks=False):
                            below.append(Path(e.path))
            except OSError:
                continue
        seen += len(level)
        if seen >= SANDBOX_DEFAULTS.control_dirs_cap:
            log.info("control file scan of %s stopped after %d folders", ws, seen)
            break
        level = below[: max(0, SANDBOX_DEFAULTS.control_dirs_cap - seen)]
    # a `.git` folder itself stays writable (objects, refs, index); its config, hooks and
    # commondir are entries of their own. A symlink is not followed: its target may be hidden.
    protect = tuple(
        p for p in found if not p.is_symlink() and not (p.name == ".git" and p.is_dir())
    )
    ndomo_dirs = tuple(p for p in found if p.name == ".ndomo" and p.is_dir() and not p.is_symlink())
    return Controls(ws, frozenset(found), protect, ndomo_dirs)


def new_controls(before: Controls) -> list[Path]:
    """Control files that appeared since `before` was taken (outermost only)."""
    now = scan_controls(before.workspace).found
    new = sorted(p for p in now - before.found)
    return [p for p in new if not any(q != p and _inside(p, q) for q in new)]


def _quarantine(paths: Sequence[Path], ws: Path, when: str) -> list[str]:
    """Move control files a sandboxed command created to `.ndomo/quarantine/` (read-only
    inside the sandbox; nothing there is read as configuration); one line each."""
    notes = []
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    for p in paths:
        if not os.path.lexists(p):
            continue
        rel = p.relative_to(ws) if _inside(p, ws) else Path(p.name)
        dest = ws / ".ndomo" / "quarantine" / stamp / rel
        n = 1
        while os.path.lexists(dest):
            n += 1
            dest = ws / ".ndomo" / "quarantine" / f"{stamp}-{n}" / rel
        try:
            dest.parent.mkdir(parents=True, exist_ok=True)
            os.rename(p, dest)
            notes.append(
                f"ndomo moved {rel}, which a sandboxed command created {when}, to "
                f"{dest.relative_to(ws)}: it is a control file (it configures git, ndomo or the editor); "
                "only the user creates those"
            )
        except OSError as exc:
            notes.append(
                f"WARNING: a sandboxed command created the control file {rel} and ndomo could not move it "
                f"({exc}) — delete it before running git, ndomo or the editor there"
            )
    return notes


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
    for d in profile.outside_read:
        mounts.append((d, ["--ro-bind-try", str(d), str(d)]))
    for p in profile.read_only:
        mounts.append((p, ["--ro-bind-try", str(p), str(p)]))
    for p in profile.keep_read:
        mounts.append((p, ["--ro-bind-try", str(p), str(p)]))
    for p in profile.hidden_files:
        mounts.append((p, ["--ro-bind", "/dev/null", str(p)]))
    for p in profile.hidden_dirs:
        mounts.append((p, ["--tmpfs", str(p), "--remount-ro", str(p)]))
    for d, entries in profile.ndomo_views:
        mounts.append((d, ["--tmpfs", str(d)]))
        mounts += [(e, ["--ro-bind", str(e), str(e)]) for e in entries]
    mounts.sort(key=lambda m: _depth(m[0]))  # stable: equal depth keeps the order above
    argv = [bwrap, *BWRAP_BASE]
    if not profile.network:
        argv.append("--unshare-net")
    for _, args in mounts:
        argv += args
    for d, _ in profile.ndomo_views:  # once the entries' mount points exist in it
        argv += ["--remount-ro", str(d)]
    for name in profile.drop_env:
        argv += ["--unsetenv", name]
    if profile.tmpdir_env:
        argv += ["--setenv", "TMPDIR", profile.tmpdir_env]
    argv += ["--setenv", "NDOMO_SANDBOX", "bubblewrap", "--chdir", str(profile.workspace), "--"]
    return argv


_DIR_NAMES = frozenset(
    {"hooks", *CONTROL_DIRS}
)  # read-only folders; the other control files are files


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
        *[f"  (subpath {_sb(d)})" for d, _ in profile.ndomo_views],
        ")",
    ]
    if profile.ndomo_views:
        lines += [
            ";; ndomo's databases",
            "(deny file-read*",
            *[f'  (regex #"^{re.escape(str(d / "ndomo.db"))}")' for d, _ in profile.ndomo_views],
            ")",
        ]
    if profile.home is not None:
        visible = [
            f"(subpath {_sb(profile.workspace)})",
            *[f"(subpath {_sb(p)})" for p in profile.home_read],
            *[f"(subpath {_sb(p)})" for p in profile.outside_read],
        ]
        lines += [
            ";; the home folder is hidden except the toolchains",
            f"(deny file-read* (require-all (subpath {_sb(profile.home)}) (require-not (require-any",
            *[f"  {v}" for v in visible],
            "))))",
        ]
    if profile.hidden_files or profile.hidden_dirs:
        lines += [
            ";; secrets inside the readable places",
            "(deny file-read* file-write*",
            *[f"  (literal {_sb(p)})" for p in profile.hidden_files],
            *[f"  (subpath {_sb(p)})" for p in profile.hidden_dirs],
            ")",
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


@dataclass(frozen=True)
class Sandboxed:
    """How to start one process: `prefix` goes before its argv (empty when unsandboxed)."""

    prefix: list[str]
    state: SandboxState
    network: bool
    controls: Controls | None = None
    notes: tuple[str, ...] = ()  # what the profile refused or undid before the run
    placeholders: tuple[Path, ...] = ()

    @property
    def sandboxed(self) -> bool:
        return bool(self.prefix)

    async def after_run(self) -> list[str]:
        """After (or while) the process runs: control files it created are quarantined;
        one line each for the tool result."""
        if self.controls is None:
            return []
        return await asyncio.to_thread(_after_run, self.controls)

    async def close(self) -> list[str]:
        """The process is gone: the last check, and the placeholders are released."""
        try:
            return await self.after_run()
        finally:
            if self.placeholders:
                await asyncio.to_thread(release_placeholders, self.placeholders)


def _after_run(before: Controls) -> list[str]:
    return _quarantine(new_controls(before), before.workspace, "during the run")


def secret_env_names(settings: Settings, env: dict[str, str] | None = None) -> tuple[str, ...]:
    """Variables a sandboxed command never sees: ndomo's own model keys, and every name
    holding KEY, SECRET, TOKEN, PASSWORD or CREDENTIAL (any case) that the user's
    `sandbox.env_allow` (names or globs) does not let through."""
    env = dict(os.environ) if env is None else env
    names = {"NDOMO_API_KEY", settings.model.api_key_env}
    allow = settings.sandbox.env_allow
    for name in env:
        upper = name.upper()
        if any(word in upper for word in SANDBOX_DEFAULTS.env_deny) and not any(
            fnmatch.fnmatchcase(name, pattern) for pattern in allow
        ):
            names.add(name)
    return tuple(sorted(n for n in names if n))


async def prepare(
    settings: Settings, workspace: Path, *, network: bool, hide_secrets: bool = False
) -> Sandboxed:
    """The sandbox for one shell command or served process in this workspace; with
    `hide_secrets`, the workspace's secret files (`secret_globs`) read as empty in it.

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
        writable_roots=settings.sandbox.writable,
        hide_secrets=settings.secret_globs if hide_secrets else None,
    )
    if state.backend == "sandbox-exec":
        prefix = seatbelt_argv(profile)
    else:
        prefix = bwrap_argv((await probe()).path or "bwrap", profile)
    return Sandboxed(
        prefix=prefix,
        state=state,
        network=network,
        controls=profile.controls,
        notes=profile.notes,
        placeholders=profile.placeholders,
    )
