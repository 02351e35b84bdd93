"""initialize → remember options; initialized → build one App per workspace folder and
start every feature on each; workspace/didChangeWorkspaceFolders → open and close Apps."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types

from ndomo import startup
from ndomo.lsp import warmup
from ndomo.lsp.logs import LogMessageHandler
from ndomo.lsp.process import life_of
from ndomo.lsp.server import Feature

if TYPE_CHECKING:
    from ndomo.app import App

log = logging.getLogger("ndomo.lsp")


class LifecycleFeature(Feature):
    name = "lifecycle"
    _starting: asyncio.Future | None = None

    def __init__(self, server) -> None:
        super().__init__(server)
        self._folders_lock = asyncio.Lock()  # start-up and folder changes, one at a time

    def register(self) -> None:
        ls = self.server

        @ls.feature(types.INITIALIZE)
        def on_initialize(params: types.InitializeParams) -> None:
            ls.init_options = params.initialization_options
            ls.sent_folders = bool(params.workspace_folders or params.root_uri or params.root_path)
            ls.ready_future()
            life_of(ls).watch_parent(params.process_id)

        @ls.feature(types.INITIALIZED)
        async def on_initialized(params: types.InitializedParams) -> None:
            for handler in logging.getLogger().handlers:  # `ndomo serve` installs one
                if isinstance(handler, LogMessageHandler) and handler.server is ls:
                    handler.ready()
            self._starting = asyncio.ensure_future(self.start())
            await asyncio.shield(self._starting)

        @ls.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
        async def on_folders(params: types.DidChangeWorkspaceFoldersParams) -> None:
            # pygls has updated `workspace.folders` already; requests that arrive meanwhile
            # wait for the change (a uri in an added folder must find its App)
            await ls.apply_change(self.folders_changed())

        @ls.feature(types.SHUTDOWN)
        async def on_shutdown(*args) -> None:
            ls.closing = True
            life_of(ls).shutdown_requested = True
            if self._starting is not None:  # let start-up finish so nothing reopens the store later
                try:
                    await asyncio.wait_for(asyncio.shield(self._starting), 10)
                except TimeoutError:
                    log.warning("start-up had not finished at shutdown")
                except Exception:  # noqa: BLE001 - start-up's failure is reported by start-up; shutdown goes on
                    log.warning("start-up failed before shutdown", exc_info=True)
            # One close for shutdown, exit and a dead editor alike; an `exit` that arrives
            # meanwhile cancels this handler, never the close (the wind-down finishes it).
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(life_of(ls).close_app())

    async def start(self) -> None:
        """Build one App per workspace folder root, publish them, then start every feature
        on each (in the client's folder order)."""
        ls = self.server
        fut = ls.ready_future()
        if fut.done():
            return
        await asyncio.to_thread(warmup.core)  # what every command needs, off the loop
        async with self._folders_lock:
            apps = [await self._load(root) for root in ls.workspace_roots()]
            for app in apps:
                ls.apps[app.root if app.has_root else None] = app
            fut.set_result(apps[0])
            for app in apps:
                await self._start_features(app)
        if not ls.closing:  # the first turn's imports, agents and model client, in the background
            ls.spawn(self._warm(apps))

    async def _load(self, root: Path | None) -> App:
        """The App of one folder root, with its runtime; configuration errors fall back to
        defaults (reported by the config feature), never failing the folder."""
        from ndomo.app import App
        from ndomo.runtime.runtime import Runtime

        ls = self.server
        try:
            app = await asyncio.to_thread(
                App.load,
                root,
                ls.init_options,
                origin="lsp",
                client_settings=ls.client_settings.get(root),
            )
        except Exception as exc:  # noqa: BLE001 - never die at start-up: run on defaults
            log.exception("loading configuration failed")
            from ndomo.trust import TrustView

            untrusted = TrustView(root=str(root or ""), state="untrusted", note=str(exc))
            app = App(root, origin="lsp", trust=untrusted)
            ls.notify_error(f"ndomo: configuration could not be loaded: {exc}")
        try:  # the runtime's plugins import every tool module: in a thread, not on the loop
            plugins = ls.plugins or await asyncio.to_thread(warmup.plugins)
            Runtime.of(app, plugins)
        except Exception:  # noqa: BLE001 - a broken feature module: the first command reports it
            log.exception("building the runtime's plugins failed")
        return app

    async def reload_folder(self, old: App) -> App:
        """Replace a folder's App by a fresh load (its trust changed): the old one's
        features let go and it closes; the new one starts its features."""
        ls = self.server
        async with self._folders_lock:
            keys = [k for k, a in ls.apps.items() if a is old]
            if not keys:  # replaced or removed meanwhile: the current one, if any
                return ls.apps.get(old.root if old.has_root else None, old)
            key = keys[0]
            for feat in ls.features:
                try:
                    await feat.on_close(old)
                except Exception:  # noqa: BLE001 - a feature that fails to let go must not keep the folder open
                    log.exception("feature %s failed to let go of %s", feat.name, old.root)
            await old.aclose()
            app = await self._load(key)
            ls.apps[key] = app
            await self._start_features(app)
        if not ls.closing:
            ls.spawn(self._warm([app]))
        return app

    async def _start_features(self, app: App) -> None:
        ls = self.server
        app.reloader = lambda: self.reload_folder(app)
        if app.no_store_reason:  # said once; commands that need the store repeat why
            ls.window_show_message(
                types.ShowMessageParams(
                    type=types.MessageType.Warning, message=f"ndomo: {app.no_store_reason}"
                )
            )
        for feat in ls.features:
            if ls.closing:
                break
            try:
                await feat.on_ready(app)
            except Exception as exc:  # noqa: BLE001 - one broken feature must not take the others down
                log.exception("feature %s failed to start", feat.name)
                ls.notify_error(f"ndomo: {feat.name} failed to start: {exc}")

    async def folders_changed(self) -> None:
        """Open an App for each folder the client added, close the Apps of removed ones
        (features first, then the App: its services and store)."""
        ls = self.server
        await asyncio.shield(ls.ready_future())  # not wait_app: that waits for this change
        async with self._folders_lock:
            if ls.closing:
                return
            wanted = ls.workspace_roots()
            for key in [k for k in ls.apps if k not in wanted]:
                app = ls.apps.pop(key)
                log.info("workspace folder %s removed: closing its store", app.root)
                for feat in ls.features:
                    try:
                        await feat.on_close(app)
                    except Exception:  # noqa: BLE001 - one feature failing must not keep the folder open
                        log.exception("feature %s failed to let go of %s", feat.name, app.root)
                await app.aclose()
            added = [root for root in wanted if root not in ls.apps]
            for root in added:
                app = await self._load(root)
                ls.apps[root] = app
                log.info("workspace folder %s added", app.root)
                await self._start_features(app)
            # keep the client's order: the first folder is the default
            ls.apps = {k: ls.apps[k] for k in wanted}
        if added and not ls.closing:
            ls.spawn(self._warm([ls.apps[r] for r in added]))

    async def _warm(self, apps: list[App]) -> None:
        from ndomo.runtime.executor import shared_client
        from ndomo.runtime.runtime import Runtime

        try:
            await asyncio.to_thread(warmup.extras)
            for app in apps:
                try:
                    await Runtime.of(app).agents()
                    await asyncio.to_thread(shared_client, app)
                except Exception:  # noqa: BLE001 - a bad agent file or model setting is reported by the first turn
                    log.debug("warm-up of agents / model client failed", exc_info=True)
        finally:
            # The start-up heap (modules, classes, schemas: most of the process) never
            # becomes garbage: frozen, it is left out of every later collection, so a full
            # collection while a turn streams no longer walks it (a pause that delayed
            # editor requests). No collect first: that would be one long pause on the loop;
            # what little garbage is frozen with it stays, once. The collector, off since
            # the process started (ndomo.startup), is back on.
            startup.release()
