"""The per-workspace services that actions, tools and the runtime share.

One `App` per workspace: built by the LSP server at initialize and by the CLI from
`--workspace`. Everything expensive (the store, the agent registry) opens lazily.

Where the workspace root is (and so where `.ndomo/` lives): a folder the editor sends,
or the CLI's `--workspace`, is the root whatever it holds — except `$HOME` and `/`, which
never get a `.ndomo/`. With no folder given (an editor in single-file mode, the CLI
without `--workspace`) the root is the nearest folder upward holding a project marker.
None found: the App runs without a store, and what needs one says why (`NoWorkspace`).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ndomo.actions import ActionError
from ndomo.config import ConfigProblem, Settings, load_settings

if TYPE_CHECKING:
    from ndomo.plans.store import PlanStore

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
    ) -> None:
        # No root: tools still resolve paths from the current folder, but nothing opens a store.
        self.has_root = root is not None
        self.root = (root if root is not None else Path.cwd()).resolve()
        self.settings = settings or Settings()
        self.config_problems = list(problems or [])
        self.origin = origin  # "lsp" or "cli": who drives this process
        self._store: PlanStore | None = None
        self._store_lock = asyncio.Lock()
        self.services: dict[str, Any] = {}  # feature-owned singletons (runtime, agents, …)

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
        settings, problems = load_settings(root, init_options, env, client_settings)
        return cls(root, settings, problems, origin=origin)

    @property
    def db_path(self) -> Path:
        p = Path(os.path.expanduser(self.settings.db))
        return p if p.is_absolute() else self.root / p

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
                from ndomo.plans.store import PlanStore

                fresh = not self.state_dir.exists()
                self._store = await PlanStore.open(self.db_path, workspace=self.root)
                if fresh or not (self.state_dir / ".gitignore").exists():
                    await asyncio.to_thread(self._write_gitignore)
            return self._store

    def _write_gitignore(self) -> None:
        """`.ndomo/.gitignore`, once: a user's own edits to it are kept."""
        path = self.state_dir / ".gitignore"
        if self.state_dir.is_dir() and not path.exists():
            try:
                path.write_text(STATE_GITIGNORE, encoding="utf-8")
            except OSError:
                log.warning("could not write %s", path, exc_info=True)

    async def aclose(self) -> None:
        """Close every service, then the store — the store even when a service fails."""
        try:
            for svc in list(self.services.values()):
                closer = getattr(svc, "aclose", None)
                if closer is None:
                    continue
                try:
                    await closer()
                except Exception:
                    log.exception("closing %r failed", svc)
        finally:
            store, self._store = self._store, None
            if store is not None:
                await store.close()
