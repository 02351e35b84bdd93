"""An MCP server's resource as text, for an `@<server>:<uri>` mention (`ndomo run`) or an
ACP `resource_link` to a resource a server lists: `resources/read` through the running
server (started now if need be, never asking: a project's server must be approved
already). Text contents only; a binary resource is refused."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ndomo.tools.mcp.basics import configured
from ndomo.tools.mcp.catalog import McpUnavailable, catalog_for
from ndomo.tools.mcp.client import McpCallError

if TYPE_CHECKING:
    from ndomo.app import App


async def read_text(app: App, server: str, uri: str) -> str:
    """The resource's text (its text contents joined); McpUnavailable says why not."""
    found = await catalog_for(app).started(server)
    assert found.connection is not None
    try:
        result = await found.connection.read_resource(uri)
    except McpCallError as exc:
        raise McpUnavailable(str(exc)) from None
    texts = []
    for item in result.contents:
        text = getattr(item, "text", None)
        if text is None:
            mime = getattr(item, "mime_type", None) or "no type given"
            raise McpUnavailable(
                f"{server}:{uri} is a binary resource ({mime}); mention text resources only"
            )
        texts.append(text)
    if not texts:
        raise McpUnavailable(f"{server}:{uri}: the server returned no contents")
    return "\n".join(texts)


async def linked(app: App, uri: str) -> tuple[str, str] | None:
    """(server, text) of the resource `uri` a server lists (the servers that start without
    asking are started to know); None when no server lists it."""
    if not configured(app):
        return None
    cat = catalog_for(app)
    server = cat.owner(uri)
    if server is None:
        await cat.start_all()
        server = cat.owner(uri)
    if server is None:
        return None
    return server.spec.name, await read_text(app, server.spec.name, uri)
