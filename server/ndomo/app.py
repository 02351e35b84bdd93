"""The per-workspace state that actions, tools and the runtime share, as typed attributes.

One `App` per workspace: built by the LSP server at initialize and by the CLI from
`--workspace`. Everything expensive (the store, the agent registry) opens lazily.

Where the workspace root is (and so where `.ndomo/` lives): a folder the editor sends,
or the CLI's `--workspace`, is the root whatever it holds — except `$HOME` and `/`, which
never get a `.ndomo/`. With no folder given (an editor in single-file mode, the CLI
without `--workspace`) the root is the nearest folder upward holding a project marker.
None found: the App runs without a store, and what needs one says why (`NoWorkspace`).

Trust (ndomo.trust): `App.load` reads the user's trust record for the root. An untrusted
or unknown folder's `.ndomo/config.yaml` is not read, its agents, reflexes and instruction
files are not loaded (`app.trust` says so; `ndomo health` lists what was skipped), and a
`.ndomo/ndomo.db` ndomo did not create for this user is not resumed: such an App keeps its
sessions in the user's data directory instead.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import subprocess
from collections.abc import Awaitable, Callable, Collection, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

from ndomo.config import ConfigProblem, Settings, load_settings, user_data_dir
from ndomo.errors import ActionError
from ndomo.trust import TRUSTED_BY_CALLER, TrustView, foreign_db_reason, session_options, view

if TYPE_CHECKING:
    from ndomo.agents.loader import AgentSet
    from ndomo.runtime.host import Host
    from ndomo.store.store import PlanStore

log = logging.getLogger("ndomo")

ROOT_MARKERS = (".git", "pyproject.toml", "package.json", "go.mod", "Cargo.toml", ".ndomo")

# Written into a new `.ndomo/`: the database, sessions, plan views, artifacts and archives
# are this machine's state; agents, config and instructions are the project's, to commit.
STATE_GITIGNORE = """\
# ndomo: local state is ignored; commit agents/, config.yaml and instructions.md.
*
!.gitignore
!agents/
!agents/**
!config.yaml
!instructions.md
"""


# what `.ndomo/.gitignore` lets a project commit: a `.ndomo/` holding one is not excluded
SHARED_STATE = ("agents", "config.yaml", "instructions.md")
GIT_TIMEOUT = 10  # seconds for one local git query


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str] | None:
    """A local git query (None: no git, or it failed). No fsmonitor: a repository's config
    runs no command of its own here."""
    try:
        return subprocess.run(
            ["git", "-c", "core.fsmonitor=false", *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):
        return None


def exclude_from_git(state_dir: Path) -> bool:
    """Add `/<path>/.ndomo/` to the repository's `.git/info/exclude` (a worktree's: the common
    dir's), once, when git does not ignore it already; never the user's `.gitignore`. True
    when a line was added. Blocking: run off the loop."""
    root = state_dir.parent
    top = _git(root, "rev-parse", "--show-toplevel", "--git-common-dir")
    if top is None or top.returncode != 0:
        return False  # not in a git repository (or no git)
    lines = top.stdout.splitlines()
    if len(lines) < 2:
        return False
    toplevel, common = Path(lines[0]), Path(lines[1])
    if not common.is_absolute():
        common = root / common
    # ".ndomo", not ".ndomo/": git would match the folder against its own .gitignore
    ignored = _git(root, "check-ignore", "-q", "--no-index", ".ndomo")
    if ignored is None or ignored.returncode == 0:
        return False  # ignored already (a .gitignore, the global excludes, info/exclude)
    try:
        rel = state_dir.resolve().relative_to(toplevel.resolve()).as_posix()
    except ValueError:
        return False
    exclude = common / "info" / "exclude"
    line = f"/{rel}/"
    try:
        text = exclude.read_text(encoding="utf-8") if exclude.exists() else ""
        if line in text.splitlines():
            return False
        exclude.parent.mkdir(parents=True, exist_ok=True)
        sep = "" if not text or text.endswith("\n") else "\n"
        with exclude.open("a", encoding="utf-8") as f:
            f.write(
                f"{sep}# ndomo's local state (see .ndomo/.gitignore to commit agents)\n{line}\n"
            )
    except OSError:
        log.warning("could not add %s to %s", line, exclude, exc_info=True)
        return False
    return True


def never_a_root(path: Path) -> bool:
    """`$HOME` and the filesystem root never hold a `.ndomo/`."""
    p = path.resolve()
    return p == Path(p.anchor) or p == Path.home().resolve()


def given_root(path: Path) -> Path | None:
    """A folder the user named (editor workspace folder, `--workspace`): the root, unless
    it is `$HOME` or `/`."""
    return None if never_a_root(path) else path.resolve()


def find_root(start: Path) -> Path | None:
    """The nearest folder from `start` upward holding a project marker (never `$HOME`, `/`)."""
    start = start.resolve()
    for d in (start, *start.parents):
        if never_a_root(d):
            continue
        if any((d / m).exists() for m in ROOT_MARKERS):
            return d
    return None


@runtime_checkable
class Closable(Protocol):
    """Something App.aclose closes (before the store): a runtime, a worker, served processes."""

    async def aclose(self) -> None: ...


T = TypeVar("T")

# The editor's Host for a turn it starts (set by the LSP layer; None in the CLI).
HostFactory = Callable[[], "Host"]
# Writes a server-owned file through the editor's buffer when it is open there: False if not.
OwnedWriter = Callable[[Path, str], Awaitable[bool]]
# Replaces this App by a freshly loaded one for the same folder (set by the LSP layer, which
# owns the Apps; None in the CLI): the trust answer then applies at once.
Reloader = Callable[[], Awaitable["App"]]


class NoWorkspace(ActionError):
    """An operation needs the plan store, and this App has no workspace root."""

    def __init__(self, message: str) -> None:
        super().__init__(message, kind="failed")


def no_root_message(where: Path) -> str:
    return (
        f"no workspace: {where} has no project root (no .git, pyproject.toml, package.json, go.mod, "
        "Cargo.toml or .ndomo/ there or above; $HOME and / never count), so plans, sessions and turns are off; "
        "open a project folder in the editor, or run `git init` or `mkdir .ndomo` in the project"
    )


class App:
    def __init__(
        self,
        root: Path | None,
        settings: Settings | None = None,
        problems: list[ConfigProblem] | None = None,
        *,
        origin: str = "cli",
        trust: TrustView | None = None,
        db_elsewhere: str = "",
    ) -> None:
        """`trust`: how this folder is trusted (App.load reads the record; an App built
        directly runs what its caller passed, as trusted). `db_elsewhere`: why the
        workspace's own database is not used (its sessions go to the user's data dir)."""
        # No root: tools still resolve paths from the current folder, but nothing opens a store.
        self.has_root = root is not None
        self.root = (root if root is not None else Path.cwd()).resolve()
        self.settings = settings or Settings()
        self.config_problems = list(problems or [])
        self.origin = origin  # "lsp" or "cli": who drives this process
        self.trust = trust or TRUSTED_BY_CALLER
        self.db_elsewhere = db_elsewhere
        self._store: PlanStore | None = None
        self._store_lock = asyncio.Lock()
        # The agent definitions once loaded (`await app.load_agents()`; the LSP reloads them).
        self.agents: AgentSet | None = None
        self._agents_soon: asyncio.Future[AgentSet] | None = None  # prefetch_agents' read
        # Set by the LSP layer when an editor drives this App; None in the CLI.
        self.host_factory: HostFactory | None = None
        self.owned_writer: OwnedWriter | None = None
        self.reloader: Reloader | None = None
        self._closables: list[Closable] = []
        self._instances: dict[type, Any] = {}  # feature-owned singletons, one per class

    @classmethod
    def load(
        cls,
        root: Path | None,
        init_options: Any = None,
        env: Mapping[str, str] | None = None,
        *,
        origin: str = "cli",
        client_settings: Any = None,
    ) -> App:
        """Blocking (files, git): from async code call it through a thread."""
        init_options, restricted = session_options(init_options)
        trust = view(root, restricted=restricted)
        settings, problems = load_settings(
            root, init_options, env, client_settings, grant=trust.grant
        )
        if trust.note and root is not None and "malformed" in trust.note:
            problems.append(ConfigProblem(key="(trust)", message=trust.note, source="trust record"))
        elsewhere = ""
        if root is not None and not trust.trusted and settings.db == Settings().db:
            elsewhere = foreign_db_reason(root.resolve(), settings.db)
            if elsewhere:
                log.info("%s: sessions kept in the user's data directory (%s)", root, elsewhere)
        return cls(root, settings, problems, origin=origin, trust=trust, db_elsewhere=elsewhere)

    @property
    def db_path(self) -> Path:
        if self.db_elsewhere:  # not this user's own: a private one in the user's data dir
            digest = hashlib.sha256(str(self.root).encode()).hexdigest()[:16]
            return user_data_dir() / "untrusted" / digest / "ndomo.db"
        p = Path(os.path.expanduser(self.settings.db))
        return p if p.is_absolute() else self.root / p

    @property
    def trusted_root(self) -> Path | None:
        """The root whose project files (agents …) apply: None until the user trusts it."""
        return self.root if self.trust.trusted else None

    @property
    def state_dir(self) -> Path:
        return self.root / ".ndomo"

    @property
    def no_store_reason(self) -> str | None:
        """Why there is no plan store (None: there is one, or will be on first use)."""
        return None if self.has_root else no_root_message(self.root)

    async def store(self) -> PlanStore:
        async with self._store_lock:
            if self._store is None:
                if not self.has_root:
                    raise NoWorkspace(no_root_message(self.root))
                from ndomo.store.store import PlanStore

                fresh = not self.state_dir.exists()
                self._store = await PlanStore.open(self.db_path, workspace=self.root)
                # (a database kept elsewhere leaves the workspace's .ndomo/ alone)
                if not self.db_elsewhere and (
                    fresh or not (self.state_dir / ".gitignore").exists()
                ):
                    await asyncio.to_thread(self._write_gitignore)
            return self._store

    async def load_agents(self, modes: Collection[str] | None = None) -> AgentSet:
        """The workspace's agents (built-in, user, project), loaded once off the loop;
        `modes` (the registered mode names) check each agent's `default_mode`."""
        if self.agents is None:
            self.prefetch_agents(modes)  # unless a turn started the read already
            soon, self._agents_soon = self._agents_soon, None
            assert soon is not None
            self.agents = await asyncio.shield(soon)
        return self.agents

    def prefetch_agents(self, modes: Collection[str] | None = None) -> None:
        """Start reading the agents (`load_agents` takes the read) when none are loaded yet:
        a turn's first needs them after the session's row and its claim, and the read (~15
        ms of files and YAML on a thread) goes on while those hops are made."""
        if self.agents is not None or self._agents_soon is not None:
            return
        from ndomo.agents.loader import load_agents_async

        # an untrusted folder's own agents are not loaded: the built-ins only
        soon = self._agents_soon = asyncio.ensure_future(
            load_agents_async(self.trusted_root, modes)
        )
        # a turn refused before it needs them (a busy session) leaves the read untaken
        soon.add_done_callback(lambda f: f.cancelled() or f.exception())

    def forget_agents(self) -> None:
        """Read the agent files again at the next `load_agents` (one was written since)."""
        self.agents = self._agents_soon = None

    def close_with(self, closable: Closable) -> None:
        """Close `closable` in App.aclose (in registration order, before the store)."""
        self._closables.append(closable)

    def instance(self, kind: type[T], make: Callable[[], T]) -> T:
        """A feature's one object of class `kind` for this App, made on first use (and
        closed with the App when it has `aclose`). Keyed by the class, so typed."""
        found = self._instances.get(kind)
        if found is None:
            found = self._instances[kind] = make()
            if isinstance(found, Closable):
                self.close_with(found)
        return found

    def existing(self, kind: type[T]) -> T | None:
        """The feature's object of class `kind`, if one was made."""
        return self._instances.get(kind)

    def _write_gitignore(self) -> None:
        """`.ndomo/.gitignore`, once: a user's own edits to it are kept. A `.ndomo/` holding
        nothing to commit yet is also excluded in git (`.git/info/exclude`), so `git status`
        does not list it as a change."""
        path = self.state_dir / ".gitignore"
        if self.state_dir.is_dir() and not path.exists():
            try:
                path.write_text(STATE_GITIGNORE, encoding="utf-8")
            except OSError:
                log.warning("could not write %s", path, exc_info=True)
                return
            if not any((self.state_dir / name).exists() for name in SHARED_STATE):
                exclude_from_git(self.state_dir)

    async def aclose(self) -> None:
        """Close every registered closable, then the store — the store even when one fails."""
        try:
            closables, self._closables = self._closables, []
            for closable in closables:
                try:
                    await closable.aclose()
                except Exception:  # noqa: BLE001 - one closable that fails must not keep the others (or the store) open
                    log.exception("closing %r failed", closable)
        finally:
            store, self._store = self._store, None
            if store is not None:
                await store.close()
