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


def make_client() -> LanguageClient:
    client = LanguageClient("bench", "0")

    @client.feature(types.WINDOW_WORK_DONE_PROGRESS_CREATE)
    def _progress(params: Any) -> None:
        return None

    @client.feature(types.WORKSPACE_CONFIGURATION)
    def _config(params: types.ConfigurationParams) -> list[Any]:
        return [None for _ in params.items]

    @client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
    def _ask(params: Any) -> None:
        return None

    @client.feature(types.WINDOW_SHOW_DOCUMENT)
    def _show(params: Any) -> types.ShowDocumentResult:
        return types.ShowDocumentResult(success=True)

    @client.feature(types.WORKSPACE_APPLY_EDIT)
    def _edit(params: Any) -> types.ApplyWorkspaceEditResult:
        return types.ApplyWorkspaceEditResult(applied=False, failure_reason="benchmark client")

    for method in ("ndomo/turn/event", "ndomo/status", "$/progress", types.WINDOW_LOG_MESSAGE,
                   types.WINDOW_SHOW_MESSAGE, types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS, "$/logTrace"):
        client.feature(method)(_ignore)
    return client


def _ignore(params: Any) -> None:
    return None


async def start(cmd: list[str], workspace: Path, env: dict[str, str] | None = None) -> tuple[LanguageClient, Any]:
    """Spawn and initialize; returns (client, initialize result)."""
    client = make_client()
    await client.start_io(cmd[0], *cmd[1:], env=env_for_server(env), cwd=str(workspace))
    uri = from_fs_path(str(workspace))
    result = await client.initialize_async(
        types.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            root_uri=uri,
            workspace_folders=[types.WorkspaceFolder(uri=uri, name=workspace.name)],
            process_id=None,
        )
    )
    client.initialized(types.InitializedParams())
    return client, result


async def stop(client: LanguageClient) -> None:
    try:
        await asyncio.wait_for(client.shutdown_async(None), 5)
        client.exit(None)
    except Exception:
        pass
    try:
        await asyncio.wait_for(client.stop(), 5)
    except Exception:
        server = getattr(client, "_server", None)
        if server is not None and server.returncode is None:
            server.kill()


def server_pid(client: LanguageClient) -> int:
    return client._server.pid  # type: ignore[union-attr]
