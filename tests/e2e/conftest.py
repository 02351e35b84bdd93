"""End-to-end fixtures: the real `ndomo serve` subprocess driven by a pytest-lsp client.

Every e2e test runs twice, with VS Code's and with Neovim's client capabilities.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from lsprotocol import types
from pygls.uris import from_fs_path
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from tests.bench.common import without_config

CLIENTS = ["visual-studio-code", "neovim"]
SHUTDOWN_WAIT_S = 30.0  # generous: a loaded machine is slow, a hung server never ends


@pytest.fixture(params=CLIENTS)
def client_name(request) -> str:
    return request.param


def server_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = without_config()
    # Unless a test points it elsewhere, the model is a closed local port: fast, offline.
    env.setdefault("NDOMO_BASE_URL", "http://127.0.0.1:9/v1")
    env.update(extra or {})
    return env


def _record_stderr(client: LanguageClient) -> None:
    """Keep the server's stderr lines on `client.stderr_lines` (still forwarded to ours)."""
    client.stderr_lines = []
    if client._stderr_forwarder is not None:
        client._stderr_forwarder.cancel()
    server = client._server

    async def forward() -> None:
        while line := await server.stderr.readline():
            client.stderr_lines.append(line.decode("utf-8", "replace"))
            sys.stderr.buffer.write(line)

    client._stderr_forwarder = asyncio.create_task(forward())


class Session:
    """Starts servers for one test; each is initialised on its own workspace."""

    def __init__(self, client_name: str) -> None:
        self.client_name = client_name
        self.clients: list[LanguageClient] = []

    async def start(
        self,
        workspace: Path,
        *,
        init_options: Any = None,
        env: dict[str, str] | None = None,
        handlers: dict[str, Any] | None = None,
        experimental: Any = None,
        send_root: bool = True,
        cwd: Path | None = None,
        folders: list[Path] | None = None,
        capabilities: Any = None,
    ) -> LanguageClient:
        """`send_root=False`: single-file mode (no rootUri, no folders); `cwd`: the server's
        folder; `folders`: the workspace folders (default: `workspace` alone);
        `capabilities(caps)`: changes the profile's client capabilities."""
        command = [sys.executable, "-m", "ndomo", "serve"]
        if cwd is not None:
            command = [
                sys.executable,
                "-c",
                "import os, sys; os.chdir(sys.argv[1]); from ndomo.compose import main; "
                "sys.exit(main(['serve']))",
                str(cwd),
            ]
        config = ClientServerConfig(
            server_command=command,
            server_env=server_env(env),
        )
        client = await config.start()
        _record_stderr(client)
        for method, fn in (handlers or {}).items():
            client.feature(method)(fn)
        self.clients.append(client)
        uri = from_fs_path(str(workspace))
        caps = client_capabilities(self.client_name)
        if experimental is not None:
            caps.experimental = experimental
        if capabilities is not None:
            capabilities(caps)
        sent = folders or [workspace]
        client.init_result = await client.initialize_session(
            types.InitializeParams(
                capabilities=caps,
                root_uri=uri if send_root else None,
                workspace_folders=[
                    types.WorkspaceFolder(uri=from_fs_path(str(f)), name=f.name) for f in sent
                ]
                if send_root
                else None,
                initialization_options=init_options,
            )
        )
        return client

    async def close(self) -> None:
        """Shut every server down; a server still running afterwards fails the test."""
        outlived: list[int] = []
        for client in self.clients:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(client.shutdown_session(), SHUTDOWN_WAIT_S)
            server = client._server
            if server is not None and server.returncode is None:
                try:
                    await asyncio.wait_for(server.wait(), SHUTDOWN_WAIT_S)
                except TimeoutError:
                    outlived.append(server.pid)
                    server.kill()
                    await server.wait()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(client.stop(), SHUTDOWN_WAIT_S)
        assert not outlived, (
            f"ndomo serve (pid {outlived}) was still running {SHUTDOWN_WAIT_S:.0f} s after shutdown/exit"
        )


@pytest_asyncio.fixture
async def lsp(client_name: str):
    session = Session(client_name)
    yield session
    await session.close()


async def command(client: LanguageClient, name: str, args: Any = None) -> Any:
    params = types.ExecuteCommandParams(command=name, arguments=None if args is None else [args])
    return await client.workspace_execute_command_async(params)
