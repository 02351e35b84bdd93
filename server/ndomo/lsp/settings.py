"""`workspace/didChangeConfiguration`: the editor's settings applied live, no restart.

On a change the server re-reads each folder's settings — pulled with
`workspace/configuration` (section `ndomo`, scoped to the folder) when the client offers
it, else the pushed `settings.ndomo` — and rebuilds each App's `Settings` from
`.ndomo/config.yaml` < initializationOptions < these editor settings < environment.
Everything read from `app.settings` at use time follows at once (model and endpoint,
modes, thresholds, shell, sandbox, review_edits …). Only `db` is not switched under an
open store: a changed `db` is kept and the user told to restart. The server command and
its arguments belong to the editor, which restarts the server for those.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.uris import from_fs_path

from ndomo.lsp.feature import Feature

if TYPE_CHECKING:
    from ndomo.app import App

log = logging.getLogger("ndomo.lsp")

SECTION = "ndomo"


class SettingsFeature(Feature):
    name = "settings"

    def __init__(self, server) -> None:
        super().__init__(server)
        self.applied = 0  # how many changes were applied (tests)
        self._lock = asyncio.Lock()  # changes apply in the order they came

    def register(self) -> None:
        ls = self.server

        @ls.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
        async def on_change(params: types.DidChangeConfigurationParams) -> None:
            async def change() -> None:
                await asyncio.shield(ls.ready_future())  # not wait_app: it waits for this
                async with self._lock:  # one change after the other, in the order they came
                    await self.apply(params.settings)

            # registered at once: requests sent after this notification see the new settings
            await ls.apply_change(change())

    def supports_pull(self) -> bool:
        caps = self.server.client_capabilities
        ws = caps.workspace if caps else None
        return bool(ws and ws.configuration)

    async def _pull(self, apps: list[App]) -> list[Any] | None:
        items = [
            types.ConfigurationItem(
                scope_uri=from_fs_path(str(app.root)) if app.has_root else None, section=SECTION
            )
            for app in apps
        ]
        try:
            values = await self.server.workspace_configuration_async(
                types.ConfigurationParams(items=items)
            )
        except Exception:  # noqa: BLE001 — a client that fails the pull: use what it pushed
            log.warning("workspace/configuration failed; using the pushed settings", exc_info=True)
            return None
        if not isinstance(values, list | tuple) or len(values) != len(apps):
            log.warning("workspace/configuration answered %r; using the pushed settings", values)
            return None
        return [_plain(v) for v in values]

    async def apply(self, pushed: Any) -> None:
        """Re-read the editor's settings for every folder and apply them."""
        ls = self.server
        keys = list(ls.apps)
        apps = [ls.apps[k] for k in keys]
        values = await self._pull(apps) if self.supports_pull() else None
        if values is None:
            pushed = _plain(pushed)
            section = pushed.get(SECTION) if isinstance(pushed, dict) else None
            values = [section] * len(apps)
        for key, app, value in zip(keys, apps, values, strict=True):
            ls.client_settings[key] = value if value else None
            await self.reload(app, value if value else None)
        self.applied += 1

    async def reload(self, app: App, client_settings: Any) -> None:
        """Rebuild `app.settings` from every source, keeping what cannot change live."""
        from ndomo.config import load_settings

        ls = self.server
        root = app.root if app.has_root else None
        from ndomo.trust import session_options

        options, _restricted = session_options(ls.init_options)
        settings, problems = await asyncio.to_thread(
            functools.partial(
                load_settings, root, options, None, client_settings, grant=app.trust.grant
            )
        )
        old = app.settings
        if settings.db != old.db:  # the store is open on the old path
            settings = settings.model_copy(update={"db": old.db})
            ls.window_show_message(
                types.ShowMessageParams(
                    type=types.MessageType.Warning,
                    message="ndomo: the `db` setting takes effect after a server restart",
                )
            )
        app.settings = settings
        app.config_problems = problems
        if settings != old:
            log.info("settings of %s changed; applied", app.root)
        for feat in ls.features:
            try:
                await feat.on_settings(app)
            except Exception:
                log.exception("feature %s failed to apply the new settings", feat.name)


def _plain(value: Any) -> Any:
    """JSON-like data from the client as plain dicts and lists (pygls may hand back
    its own named-tuple objects for JSON objects)."""
    if hasattr(value, "_asdict"):
        value = value._asdict()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value
