"""MCP: the tools of Model Context Protocol servers, inside the fence and the OS sandbox.

Sources, approvals: `sources`; one server's connection: `client`; the tools offered and
the servers started with the session: `catalog`; prompts as slash commands: `prompts`;
resources read for an `@server:uri` mention: `resources`; `ndomo mcp list/approve/revoke`:
`actions`. What every process registers is `hooks`: the rest loads when a workspace
configures a server, or a prompt or a mention names one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ndomo.tools.mcp.hooks import ExpandPrompt, StartServers, listed, provide

if TYPE_CHECKING:
    from ndomo.runtime.plugins import Plugins


def setup(plugins: Plugins) -> None:
    plugins.tools.providers.append(provide)
    plugins.hooks.add(StartServers())
    plugins.hooks.add(ExpandPrompt())
    plugins.slash.listers.append(listed)
