"""The ndomo language server: a thin pygls shell around the `App`, and the `Feature` base.

The floor of `lsp/`: it imports no other module of it. Features are small classes
(`Feature`, below) listed in `lsp.features`, which builds the server with them and with
the process's protocol (`lsp.process`); each registers its handlers in one place and its
failures are isolated (logged, reported, never fatal to the server).
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.uris import to_fs_path

from ndomo import __version__
from ndomo.listeners import Listeners

if TYPE_CHECKING:  # the App (config, pydantic, yaml) loads after `initialized`
    from ndomo.app import App

log = logging.getLogger("ndomo.lsp")


class NdomoServer(LanguageServer):
    def __init__(self, protocol_cls: type[LanguageServerProtocol] = LanguageServerProtocol) -> None:
        super().__init__(
            "ndomo",
            __version__,
            # Editors send only the changed ranges; pygls applies them to its copy, which
            # every reader (LspHost, owned files, didSave) takes its text and version from.
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            # `lsp.process.NdomoProtocol` when served (`lsp.features.create_server`): the
            # stdio loop, the wind-down and the editor's process (`life_of(server)`).
            protocol_cls=protocol_cls,
        )
        # One App (one store) per workspace folder root, in the client's order; the key
        # None is the App without a root (no store) when the client sent no usable folder.
        self.apps: dict[Path | None, App] = {}
        self.active_uri: str | None = None  # the document the user last worked in
        # Folder and settings changes being applied: requests wait for them, so a request
        # sent after a change sees it.
        self.changes: set[asyncio.Future] = set()
        self.init_options: Any = None
        self.plugins: Any = None  # the runtime's registries, built for the initialize result
        self.catalog: dict[str, Any] | None = None  # modes and agents advertised at initialize
        # The editor's `ndomo` settings (workspace/configuration or didChangeConfiguration),
        # per folder root; layered over initializationOptions (see lsp.settings).
        self.client_settings: dict[Path | None, Any] = {}
        # The client named folders (or a root) at initialize: markers never decide the root.
        self.sent_folders = False
        self._ready: asyncio.Future[App] | None = None
        self.features: list[Feature] = []
        # Features that offer quick fixes on their own diagnostics (plan tasks …):
        # `(CodeActionParams) -> list[CodeAction]`, answered for each code-action request.
        self.quick_fix_providers: Listeners[[types.CodeActionParams]] = Listeners("quick-fix")
        # told the path and text of every saved document (plan views, agent files …)
        self.save_listeners: Listeners[[str, str]] = Listeners("didSave")
        # told the name of every executed command (refresh what it may have changed)
        self.command_listeners: Listeners[[str]] = Listeners("executeCommand")
        self._background: set[asyncio.Task] = set()
        self.closing = False  # shutdown requested: background work stops, nothing reopens the store

    # -- the Apps are built once the client said `initialized`; handlers wait for them
    def ready_future(self) -> asyncio.Future[App]:
        if self._ready is None:
            self._ready = asyncio.get_running_loop().create_future()
        return self._ready

    async def wait_app(self, uri: str | None = None) -> App:
        """The App for `uri` (see `app_for`), once start-up has built the Apps."""
        first = await asyncio.shield(self.ready_future())
        pending = [c for c in self.changes if not c.done()]
        if pending:
            await asyncio.wait(pending)  # a change's failure is logged by its handler, not here
        return self.app_for(uri) or first

    async def apply_change(self, coro) -> None:
        """Run a folder or settings change that later requests wait for (see `wait_app`)."""
        change = asyncio.ensure_future(coro)
        self.changes.add(change)
        change.add_done_callback(self.changes.discard)
        await asyncio.shield(change)

    @property
    def app(self) -> App | None:
        """The App for what names no document: the folder of the document the user last
        worked in (opened, changed, saved, asked code actions for), else the first folder."""
        if self.active_uri is not None:
            app = self.app_of(self.active_uri)
            if app is not None:
                return app
        return next(iter(self.apps.values()), None)

    def app_of(self, uri_or_path: str | Path) -> App | None:
        """The App whose root holds `uri_or_path` (the innermost, for nested folders)."""
        if isinstance(uri_or_path, str) and ":" in uri_or_path.split("/", 1)[0]:
            fs = to_fs_path(uri_or_path) if uri_or_path.startswith("file:") else None
            if fs is None:
                return None
            path = Path(fs)
        else:
            path = Path(uri_or_path)
        best: App | None = None
        for root, app in self.apps.items():
            if root is None or not path.is_relative_to(root):
                continue
            if best is None or len(root.parts) > len(best.root.parts):
                best = app
        return best

    def app_for(self, uri: str | Path | None) -> App | None:
        """The App a request about `uri` goes to: its folder's, else the default (`app`)."""
        return (self.app_of(uri) if uri else None) or self.app

    def touch(self, uri: str) -> None:
        """The user works in `uri`: commands without a uri go to its folder from now on."""
        if self.app_of(uri) is not None:
            self.active_uri = uri

    def workspace_roots(self) -> list[Path | None]:
        """Every folder the client sent, in its order (never $HOME or /); with none
        (single-file mode) the nearest project marker above the server's folder; `[None]`:
        no root, no store."""
        from ndomo.app import find_root, given_root

        uris = [f.uri for f in self.workspace.folders.values()]
        if not uris and self.workspace.root_uri:
            uris = [self.workspace.root_uri]
        if not uris and not self.sent_folders:
            return [find_root(Path.cwd())]
        roots: list[Path | None] = []
        for uri in uris:
            path = to_fs_path(uri) if uri.startswith("file:") else None
            root = given_root(Path(path)) if path else None
            if root is not None and root not in roots:
                roots.append(root)
        return roots or [None]

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

    def notify_error(self, message: str) -> None:
        self.window_show_message(
            types.ShowMessageParams(type=types.MessageType.Error, message=message)
        )


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
