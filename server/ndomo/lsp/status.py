"""`ndomo/status` on every change, and the LspHost for turns started from this editor."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pygls.uris import from_fs_path

from ndomo.lsp import protocol
from ndomo.lsp.server import Feature

if TYPE_CHECKING:
    from pathlib import Path

    from ndomo.app import App
    from ndomo.runtime.events import Status


class StatusFeature(Feature):
    name = "status"

    def register(self) -> None:
        pass

    async def on_ready(self, app: App) -> None:
        from ndomo.lsp.host import new_host
        from ndomo.runtime.runtime import Runtime

        rt = Runtime.of(app)
        app.host_factory = lambda: new_host(self.server, app)

        async def owned_writer(
            path: Path, text: str
        ) -> bool:  # session exports open in this editor
            from ndomo.lsp.host import write_owned

            return await write_owned(self.server, path, text)

        app.owned_writer = owned_writer

        folder = from_fs_path(str(app.root)) if app.has_root else None

        async def send(status: Status) -> None:  # `folder`: whose status, with several folders
            self.server.protocol.notify(
                protocol.STATUS, protocol.status_params(status, folder, app.trust.state)
            )

        rt.status_listeners.add(send)
        if app.no_store_reason is None:  # no store, no session to show
            await rt.publish_status(await rt.session())

    async def on_settings(self, app: App) -> None:
        """The editor's settings changed: what the status shows of them (`auto_allow`, the
        model) is sent now, not with the next turn or session."""
        from ndomo.runtime.runtime import Runtime

        rt = app.existing(Runtime)
        if rt is None or app.no_store_reason is not None:  # not ready yet: on_ready sends it
            return
        await rt.publish_status(await rt.session())
