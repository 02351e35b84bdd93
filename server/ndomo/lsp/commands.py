"""Every declared action becomes the LSP command `ndomo.<name>` (one object argument).

With several workspace folders a command runs in one folder's App: the folder holding the
argument's `uri` (a routing key every command accepts; actions that declare `uri`, such as
`turn`, also receive it), else the folder of the document the user last worked in, else the
first folder.

Handlers are registered from `command_names` so `initialize` does not wait for the action
modules; each handler finds its action in the registry on first use (the registry is
normally imported already by the background warm-up started at `initialized`).
"""

from __future__ import annotations

import logging
from typing import Any

from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from ndomo.lsp.command_names import LSP_ACTION_NAMES, READ_ONLY_ACTIONS
from ndomo.lsp.feature import Feature
from ndomo.lsp.protocol import command as command_name

REQUEST_FAILED = -32803  # LSP ErrorCodes.RequestFailed

log = logging.getLogger("ndomo.lsp")


class CommandsFeature(Feature):
    name = "commands"

    def register(self) -> None:
        for name in LSP_ACTION_NAMES:
            self._register(name)

    def _register(self, name: str) -> None:
        ls = self.server
        command = command_name(name)

        async def handler(*args: Any) -> Any:
            if len(args) > 1:
                raise JsonRpcInvalidParams(
                    message=f"{command} takes one object argument, got {len(args)}"
                )
            raw = args[0] if args else None
            uri = raw.get("uri") if isinstance(raw, dict) else None
            app = await ls.wait_app(uri if isinstance(uri, str) else None)
            from ndomo.actions import ActionError, load_actions

            act = load_actions().get(name)
            if act is None:  # the manifest names an action nobody declares any more
                raise JsonRpcException(message=f"{command}: no such action", code=REQUEST_FAILED)
            if isinstance(raw, dict) and uri is not None and "uri" not in act.params.model_fields:
                raw = {k: v for k, v in raw.items() if k != "uri"}  # routing only
            try:
                return await act.invoke(app, raw)
            except ActionError as exc:
                if exc.kind == "invalid":
                    raise JsonRpcInvalidParams(message=f"{command}: {exc.message}") from None
                raise JsonRpcException(
                    message=f"{command}: {exc.message}", code=REQUEST_FAILED
                ) from None
            finally:  # whatever the command changed (plans, tasks …) shows up at once
                if name not in READ_ONLY_ACTIONS:
                    ls.spawn(ls.command_listeners.notify(name))

        handler.__name__ = command.replace(".", "_")
        ls.command(command)(handler)
