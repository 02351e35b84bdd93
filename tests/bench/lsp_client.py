"""A pygls client that starts a server over stdio and answers what servers ask of editors.

It reads a message as an editor does: ndomo's own methods (`ndomo/status`,
`ndomo/turn/event`, `ndomo/approve` …) reach their handlers as the JSON's dicts, as
`JSON.parse` (VS Code) and `vim.json.decode` (Neovim) give them. pygls's fallback for a
method lsprotocol does not know builds a namedtuple class for every object in its params:
0.2-0.8 ms of this client's time per message (a status, 383 B: ~0.5 ms against ~0.02 ms
for the JSON itself), spent between the server's write and the handler, on the timed path
of every LSP row (docs/performance.md, Stop 39).
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.client import LanguageClient
from pygls.protocol import JsonRPCNotification, JsonRPCRequestMessage, LanguageServerProtocol
from pygls.uris import from_fs_path
from pytest_lsp import client_capabilities

from tests.bench.common import env_for_server

NDOMO = [sys.executable, "-m", "ndomo", "serve"]
FLOOR = [sys.executable, "-m", "tests.bench.floor_server"]


class EditorProtocol(LanguageServerProtocol):
    """pygls's protocol, with the params of a method lsprotocol does not know left as dicts."""

    def structure_message(self, data: dict[str, Any]) -> Any:
        method = data.get("method")
        if (
            "jsonrpc" not in data  # an object inside a message (json.loads's hook is bottom-up)
            or not isinstance(method, str)
            or self.get_message_type(method) is not None
        ):
            return super().structure_message(data)
        params = data.get("params")
        if "id" in data:
            return JsonRPCRequestMessage(
                id=data["id"], method=method, jsonrpc=data["jsonrpc"], params=params
            )
        return JsonRPCNotification(method=method, jsonrpc=data["jsonrpc"], params=params)


def make_client(handlers: dict[str, Any] | None = None) -> LanguageClient:
    """A client answering what servers ask of editors; `handlers` replace the defaults."""
    client = LanguageClient("bench", "0", protocol_cls=EditorProtocol)

    def _config(params: types.ConfigurationParams) -> list[Any]:
        return [None for _ in params.items]

    features: dict[str, Any] = {
        types.WINDOW_WORK_DONE_PROGRESS_CREATE: lambda params: None,
        types.WORKSPACE_CONFIGURATION: _config,
        types.WINDOW_SHOW_MESSAGE_REQUEST: lambda params: None,
        types.WINDOW_SHOW_DOCUMENT: lambda params: types.ShowDocumentResult(success=True),
        types.WORKSPACE_APPLY_EDIT: lambda params: types.ApplyWorkspaceEditResult(
            applied=False, failure_reason="benchmark client"
        ),
    }
    for method in (
        "ndomo/turn/event",
        "ndomo/status",
        "$/progress",
        types.WINDOW_LOG_MESSAGE,
        types.WINDOW_SHOW_MESSAGE,
        types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS,
        "$/logTrace",
    ):
        features[method] = _ignore
    features.update(handlers or {})
    for method, fn in features.items():
        if asyncio.iscoroutinefunction(fn):

            async def handler(params, _fn=fn):
                return await _fn(params)
        else:

            def handler(params, _fn=fn):
                return _fn(params)

        client.feature(method)(handler)
    return client


def _ignore(params: Any) -> None:
    return None


async def start(
    cmd: list[str],
    workspace: Path,
    env: dict[str, str] | None = None,
    handlers: dict[str, Any] | None = None,
) -> tuple[LanguageClient, Any]:
    """Spawn and initialize; returns (client, initialize result)."""
    client = make_client(handlers)
    await client.start_io(cmd[0], *cmd[1:], env=env_for_server(env), cwd=str(workspace))
    uri = from_fs_path(str(workspace))
    try:
        result = await client.initialize_async(
            types.InitializeParams(
                capabilities=client_capabilities("visual-studio-code"),
                root_uri=uri,
                workspace_folders=[types.WorkspaceFolder(uri=uri, name=workspace.name)],
                process_id=None,
            )
        )
    except BaseException:
        await stop(client)  # a server that failed to initialize is not left running
        raise
    client.initialized(types.InitializedParams())
    return client, result


async def stop(client: LanguageClient) -> None:
    try:
        await asyncio.wait_for(client.shutdown_async(None), 5)
        client.exit(None)
    except Exception:  # noqa: BLE001 - a polite shutdown that fails is followed by stop/kill below
        pass
    try:
        await asyncio.wait_for(client.stop(), 5)
    except Exception:  # noqa: BLE001 - whatever stop raised, the server process is killed
        server = getattr(client, "_server", None)
        if server is not None and server.returncode is None:
            server.kill()


def server_pid(client: LanguageClient) -> int:
    return client._server.pid  # type: ignore[union-attr]
