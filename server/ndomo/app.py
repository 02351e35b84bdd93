"""The per-workspace services that actions, tools and the runtime share.

One `App` per workspace: built by the LSP server at initialize and by the CLI from
`--workspace`. Everything expensive (the store, the agent registry) opens lazily.
"""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from ndomo.config import ConfigProblem, Settings, load_settings

if TYPE_CHECKING:
    from ndomo.plans.store import PlanStore

log = logging.getLogger("ndomo")


class App:
    def __init__(
        self,
        root: Path,
        settings: Settings | None = None,
        problems: list[ConfigProblem] | None = None,
        *,
        origin: str = "cli",
    ) -> None:
        self.root = root.resolve()
        self.settings = settings or Settings()
        self.config_problems = list(problems or [])
        self.origin = origin  # "lsp" or "cli": who drives this process
        self._store: PlanStore | None = None
        self._store_lock = asyncio.Lock()
        self.services: dict[str, Any] = {}  # feature-owned singletons (runtime, agents, …)

    @classmethod
    def load(
        cls,
        root: Path,
        init_options: Any = None,
        env: Mapping[str, str] | None = None,
        *,
        origin: str = "cli",
    ) -> "App":
        settings, problems = load_settings(root, init_options, env)
        return cls(root, settings, problems, origin=origin)

    @property
    def db_path(self) -> Path:
        p = Path(os.path.expanduser(self.settings.db))
        return p if p.is_absolute() else self.root / p

    @property
    def state_dir(self) -> Path:
        return self.root / ".ndomo"

    async def store(self) -> "PlanStore":
        async with self._store_lock:
            if self._store is None:
                from ndomo.plans.store import PlanStore

                self._store = await PlanStore.open(self.db_path, workspace=self.root)
            return self._store

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
