"""A pygls client that starts a server over stdio and answers what servers ask of editors."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.client import LanguageClient
from pygls.uris import from_fs_path
from pytest_lsp import client_capabilities

from tests.bench.common import env_for_server

NDOMO = [sys.executable, "-m", "ndomo", "serve"]
FLOOR = [sys.executable, "-m", "tests.bench.floor_server"]


def make_client(handlers: dict[str, Any] | None = None) -> LanguageClient:
    """A client answering what servers ask of editors; `handlers` replace the defaults."""
    client = LanguageClient("bench", "0")

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
