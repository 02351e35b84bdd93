"""The ndomo language server: a thin pygls shell around the `App`.

Features are small classes (`lsp.feature.Feature`) listed in `lsp.features.FEATURES`; each registers its handlers in one
place and its failures are isolated (logged, reported, never fatal to the server).
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from ndomo import __version__

if TYPE_CHECKING:  # the App (config, pydantic, yaml) loads after `initialized`
    from ndomo.app import App
    from ndomo.lsp.feature import Feature
    from ndomo.lsp.logs import LogMessageHandler

log = logging.getLogger("ndomo.lsp")


class NdomoServer(LanguageServer):
    def __init__(self) -> None:
        from ndomo.lsp.process import Life, NdomoProtocol

        super().__init__(
            "ndomo",
            __version__,
            # Editors send only the changed ranges; pygls applies them to its copy, which
            # every reader (LspHost, owned files, didSave) takes its text and version from.
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            protocol_cls=NdomoProtocol,
        )
        self.life = Life(self)  # stdio loop, wind-down, the editor's process
        self.log_handler: LogMessageHandler | None = None  # installed by `ndomo serve`
        self.app: App | None = None
        self.init_options: Any = None
        self.plugins: Any = None  # the runtime's registries, built for the initialize result
        self.catalog: dict[str, Any] | None = None  # modes and agents advertised at initialize
        self._ready: asyncio.Future[App] | None = None
        self.features: list[Feature] = []
        # Features that offer quick fixes on their own diagnostics (plan tasks …).
        self.quick_fix_providers: list = []
        # async fn(uri, text) called on textDocument/didSave (plan views, agent files …).
        self.save_listeners: list = []
        # async fn(command_name) called after every executeCommand (refresh what it may have changed).
        self.command_listeners: list = []
        # fn(host) called on each new LspHost (turn progress, transcript …).
        self.host_setups: list = []
        self._background: set[asyncio.Task] = set()
        self.closing = False  # shutdown requested: background work stops, nothing reopens the store

    # -- the App is built once the client said `initialized`; handlers wait for it
    def ready_future(self) -> asyncio.Future[App]:
        if self._ready is None:
            self._ready = asyncio.get_running_loop().create_future()
        return self._ready

    async def wait_app(self) -> App:
        return await asyncio.shield(self.ready_future())

    def workspace_root(self) -> Path | None:
        """The folder the client sent (never $HOME or /); with none (single-file mode) the
        nearest project marker above the server's folder; None: no root, no store."""
        from ndomo.app import find_root, given_root

        folders = list(self.workspace.folders.values())
        uri = folders[0].uri if folders else self.workspace.root_uri
        path = to_fs_path(uri) if uri else None
        if path:
            return given_root(Path(path))
        return find_root(Path.cwd())

    def new_host(self):
        """The Host for one editor-started turn, with every feature's listeners attached."""
        from ndomo.lsp.host import LspHost

        host = LspHost(self)
        for setup in self.host_setups:
            setup(host)
        return host

    def spawn(self, coro) -> asyncio.Task:
        """Run work in the background without losing the task or its exceptions."""
        task = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)

        def done(t: asyncio.Task) -> None:
            self._background.discard(t)
            if not t.cancelled() and t.exception() is not None:
                log.error("background task failed", exc_info=t.exception())

        task.add_done_callback(done)
        return task

    async def notify_listeners(self, listeners: list, *args: Any) -> None:
        for fn in list(listeners):
            try:
                await fn(*args)
            except Exception:
                log.exception("listener %r failed", fn)

    def notify_error(self, message: str) -> None:
        self.window_show_message(
            types.ShowMessageParams(type=types.MessageType.Error, message=message)
        )


def create_server() -> NdomoServer:
    from ndomo.lsp.features import FEATURES

    server = NdomoServer()
    for cls in FEATURES:
        feat = cls(server)
        feat.register()
        server.features.append(feat)
    return server
