"""Every declared action becomes the LSP command `ndomo.<name>` (one object argument)."""

from __future__ import annotations

import logging
from typing import Any

from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

REQUEST_FAILED = -32803  # LSP ErrorCodes.RequestFailed

from ndomo.actions import Action, ActionError, load_actions
from ndomo.lsp.server import Feature

log = logging.getLogger("ndomo.lsp")


class CommandsFeature(Feature):
    name = "commands"

    def register(self) -> None:
        for act in load_actions().all("lsp"):
            self._register(act)

    def _register(self, act: Action) -> None:
        ls = self.server

        async def handler(*args: Any) -> Any:
            if len(args) > 1:
                raise JsonRpcInvalidParams(message=f"{act.command} takes one object argument, got {len(args)}")
            app = await ls.wait_app()
            try:
                return await act.invoke(app, args[0] if args else None)
            except ActionError as exc:
                if exc.kind == "invalid":
                    raise JsonRpcInvalidParams(message=f"{act.command}: {exc.message}") from None
                raise JsonRpcException(message=f"{act.command}: {exc.message}", code=REQUEST_FAILED) from None
            finally:  # whatever the command changed (plans, tasks …) shows up at once
                ls.spawn(ls.notify_listeners(ls.command_listeners, act.name))

        handler.__name__ = act.command.replace(".", "_")
        ls.command(act.command)(handler)
