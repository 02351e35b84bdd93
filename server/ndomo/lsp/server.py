"""The ndomo language server: a thin pygls shell around the `App`.

Features are small classes listed in `FEATURES`; each registers its handlers in one
place and its failures are isolated (logged, reported, never fatal to the server).
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from ndomo import __version__
from ndomo.app import App

log = logging.getLogger("ndomo.lsp")


class NdomoServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("ndomo", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Full)
        self.app: App | None = None
        self.init_options: Any = None
        self._ready: asyncio.Future[App] | None = None
        self.features: list[Feature] = []
        # Features that offer quick fixes on their own diagnostics (plan tasks …).
        self.quick_fix_providers: list = []

    # -- the App is built once the client said `initialized`; handlers wait for it
    def ready_future(self) -> asyncio.Future[App]:
        if self._ready is None:
            self._ready = asyncio.get_running_loop().create_future()
        return self._ready

    async def wait_app(self) -> App:
        return await asyncio.shield(self.ready_future())

    def workspace_root(self) -> Path:
        folders = list(self.workspace.folders.values())
        uri = folders[0].uri if folders else self.workspace.root_uri
        path = to_fs_path(uri) if uri else None
        return Path(path) if path else Path.cwd()

    def notify_error(self, message: str) -> None:
        self.window_show_message(types.ShowMessageParams(type=types.MessageType.Error, message=message))


class Feature:
    """One concern of the editor surface. Subclasses register handlers in `register`."""

    name = "feature"

    def __init__(self, server: NdomoServer) -> None:
        self.server = server

    def register(self) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    async def on_ready(self, app: App) -> None:
        """Called once the App exists (after `initialized`)."""


def _feature_classes() -> list[type[Feature]]:
    from ndomo.lsp.code_actions import CodeActionsFeature
    from ndomo.lsp.commands import CommandsFeature
    from ndomo.lsp.config_report import ConfigReportFeature
    from ndomo.lsp.lifecycle import LifecycleFeature
    from ndomo.lsp.status import StatusFeature

    return [LifecycleFeature, ConfigReportFeature, CommandsFeature, CodeActionsFeature, StatusFeature]


def create_server() -> NdomoServer:
    server = NdomoServer()
    for cls in _feature_classes():
        feat = cls(server)
        feat.register()
        server.features.append(feat)
    return server
