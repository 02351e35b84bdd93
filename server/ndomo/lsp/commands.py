"""Every declared action becomes the LSP command `ndomo.<name>` (one object argument).

With several workspace folders a command runs in one folder's App: the folder holding the
argument's `uri` (a routing key every command accepts; actions that declare `uri`, such as
`turn`, also receive it), else the folder of the document the user last worked in, else the
first folder.

The commands are the declared actions (`warmup.actions()`, the composition root's list),
registered when the server is created: `initialize` advertises every one. Importing them
then costs the first answer nothing — `initialize` waits for the runtime's features anyway,
which load the actions (docs/performance.md).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from ndomo.lsp import warmup
from ndomo.lsp.server import Feature

if TYPE_CHECKING:
    from ndomo.actions import Action

REQUEST_FAILED = -32803  # LSP ErrorCodes.RequestFailed

log = logging.getLogger("ndomo.lsp")


class CommandsFeature(Feature):
    name = "commands"

    def register(self) -> None:
        for act in warmup.actions().all("lsp"):
            self._register(act)

    def _register(self, act: Action) -> None:
        ls = self.server
        command = act.command

        async def handler(*args: Any) -> Any:
            if len(args) > 1:
                raise JsonRpcInvalidParams(
                    message=f"{command} takes one object argument, got {len(args)}"
                )
            raw = args[0] if args else None
            uri = raw.get("uri") if isinstance(raw, dict) else None
            app = await ls.wait_app(uri if isinstance(uri, str) else None)
            from ndomo.actions import ActionError

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
                if not act.read_only:
                    ls.spawn(ls.command_listeners.notify(act.name))

        handler.__name__ = command.replace(".", "_")
        ls.command(command)(handler)
