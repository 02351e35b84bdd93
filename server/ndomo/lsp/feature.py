"""The base class every editor feature derives from, in its own module.

Features import this, never `lsp.server` (which imports the feature list): that keeps
`lsp/` free of import cycles.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the App (config, pydantic, yaml) loads after `initialized`
    from ndomo.app import App
    from ndomo.lsp.server import NdomoServer


class Feature:
    """One concern of the editor surface. Subclasses register handlers in `register`."""

    name = "feature"

    def __init__(self, server: NdomoServer) -> None:
        self.server = server

    def register(self) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    async def on_ready(self, app: App) -> None:
        """Called once per App (one per workspace folder), when it exists."""

    async def on_close(self, app: App) -> None:
        """Called when a workspace folder is removed, before its App closes."""

    async def on_settings(self, app: App) -> None:
        """Called after `app.settings` changed (workspace/didChangeConfiguration)."""
