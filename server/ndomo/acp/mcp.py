"""The MCP servers an ACP client passes in `session/new` / `session/load`, as ndomo's own
server settings (`mcp.servers` entries), with their defaults: a stdio server runs in the
OS sandbox offline, like a server of the user's config without `network: allow` (the user
gives one the network by defining it there: a configured server of the same name wins); an
http one is reached directly. SSE, deprecated by MCP, is not offered (`mcpCapabilities.sse` false).
"""

from __future__ import annotations

import re
from typing import Any

from acp.schema import HttpMcpServer, McpServerStdio
from pydantic import ValidationError

from acp import RequestError
from ndomo.config import MCP_SERVER_NAME, McpServerConfig
from ndomo.validation import describe


def _bad(message: str) -> RequestError:
    return RequestError.invalid_params({"message": message})


def mcp_configs(servers: list[Any] | None) -> dict[str, McpServerConfig]:
    """name → config; a server ndomo cannot run refuses the request with why."""
    out: dict[str, McpServerConfig] = {}
    for server in servers or []:
        name = getattr(server, "name", "")
        if not isinstance(name, str) or not re.match(MCP_SERVER_NAME, name):
            raise _bad(
                f"MCP server name {name!r}: letters, digits and '-', parts joined by one '_'"
            )
        if name in out:
            raise _bad(f"MCP server {name!r} is given twice")
        try:
            if isinstance(server, McpServerStdio):
                config = McpServerConfig(
                    command=server.command,
                    args=list(server.args),
                    env={e.name: e.value for e in server.env},
                )
            elif isinstance(server, HttpMcpServer):
                config = McpServerConfig(
                    type="http", url=server.url, headers={h.name: h.value for h in server.headers}
                )
            else:
                raise _bad(
                    f"MCP server {name!r}: ndomo connects to stdio and http servers, not "
                    f"{getattr(server, 'type', 'this kind')}"
                )
        except ValidationError as exc:
            raise _bad(f"MCP server {name!r}: {describe(exc)}") from None
        out[name] = config
    return out
