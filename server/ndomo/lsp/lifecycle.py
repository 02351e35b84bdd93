"""initialize → remember options; initialized → build the App and start every feature."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging

from lsprotocol import types

from ndomo.lsp import warmup
from ndomo.lsp.server import Feature

log = logging.getLogger("ndomo.lsp")


class LifecycleFeature(Feature):
    name = "lifecycle"
    _starting: asyncio.Future | None = None

    def register(self) -> None:
        ls = self.server

        @ls.feature(types.INITIALIZE)
        def on_initialize(params: types.InitializeParams) -> None:
            ls.init_options = params.initialization_options
            ls.ready_future()
            ls.life.watch_parent(params.process_id)

        @ls.feature(types.INITIALIZED)
        async def on_initialized(params: types.InitializedParams) -> None:
            if ls.log_handler is not None:
                ls.log_handler.ready()
            self._starting = asyncio.ensure_future(self.start())
            await asyncio.shield(self._starting)

        @ls.feature(types.SHUTDOWN)
        async def on_shutdown(*args) -> None:
            ls.closing = True
            ls.life.shutdown_requested = True
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
                await asyncio.shield(ls.life.close_app())

    async def start(self) -> None:
        ls = self.server
        fut = ls.ready_future()
        if fut.done():
            return
        root = ls.workspace_root()
        await asyncio.to_thread(warmup.core)  # what every command needs, off the loop
        from ndomo.app import App

        try:
            app = await asyncio.to_thread(App.load, root, ls.init_options, origin="lsp")
        except Exception as exc:  # never die at start-up: run on defaults
            log.exception("loading configuration failed")
            app = App(root, origin="lsp")
            ls.notify_error(f"ndomo: configuration could not be loaded: {exc}")
        from ndomo.runtime.runtime import Runtime

        try:  # the runtime's plugins import every tool module: in a thread, not on the loop
            plugins = ls.plugins or await asyncio.to_thread(warmup.plugins)
            Runtime.of(app, plugins)
        except Exception:  # a broken feature module: the first command reports it
            log.exception("building the runtime's plugins failed")
        ls.app = app
        fut.set_result(app)
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
            except Exception as exc:  # one broken feature must not take the others down
                log.exception("feature %s failed to start", feat.name)
                ls.notify_error(f"ndomo: {feat.name} failed to start: {exc}")
        if not ls.closing:  # the first turn's imports, agents and model client, in the background
            ls.spawn(self._warm(app))

    async def _warm(self, app) -> None:
        from ndomo.runtime.executor import shared_client
        from ndomo.runtime.runtime import Runtime

        await asyncio.to_thread(warmup.extras)
        try:
            await Runtime.of(app).agents()
            await asyncio.to_thread(shared_client, app)
        except Exception:  # a bad agent file or model setting is reported by the first turn
            log.debug("warm-up of agents / model client failed", exc_info=True)
        # The start-up heap (modules, classes, schemas: most of the process) never becomes
        # garbage: frozen, it is left out of every later collection, so a full collection
        # while a turn streams no longer walks it (a pause that delayed editor requests).
        # No collect first: that would be one long pause on the loop; what little garbage is
        # frozen with it stays, once.
        gc.freeze()
