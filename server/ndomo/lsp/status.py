"""`ndomo/status` on every change, and the LspHost for turns started from this editor."""

from __future__ import annotations

from ndomo.app import App
from ndomo.lsp.server import Feature
from ndomo.runtime.events import Status
from ndomo.runtime.runtime import Runtime


class StatusFeature(Feature):
    name = "status"

    def register(self) -> None:
        pass

    async def on_ready(self, app: App) -> None:
        rt = Runtime.of(app)
        app.services["host_factory"] = self.server.new_host

        async def send(status: Status) -> None:
            self.server.protocol.notify("ndomo/status", status.model_dump(mode="json"))

        rt.status_listeners.append(send)
        await rt.publish_status(await rt.session())
