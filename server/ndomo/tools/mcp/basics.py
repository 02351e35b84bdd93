"""What the MCP modules share, and what any process may ask without loading them: the tools'
name prefix, the `@server:uri` syntax a mention is read with, and whether a workspace has
servers (or a catalog exists already)."""

from __future__ import annotations

import re
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ndomo.app import App

PREFIX = "mcp__"
# `<server>:<uri>`: a server's name (config.MCP_SERVER_NAME) and a URI with its scheme
REFERENCE = re.compile(r"^([A-Za-z0-9-]+(?:_[A-Za-z0-9-]+)*):([A-Za-z][A-Za-z0-9+.-]*:\S+)$")


def reference(word: str) -> tuple[str, str] | None:
    """(server, uri) when `word` reads `<server>:<scheme>:…`, else None."""
    match = REFERENCE.match(word)
    return (match.group(1), match.group(2)) if match else None


def has_catalog(app: App) -> bool:
    """Has the app's catalog been made? Only the catalog module makes one: while it is not
    imported there is none, and asking loads nothing."""
    catalog = sys.modules.get("ndomo.tools.mcp.catalog")
    return catalog is not None and app.existing(catalog.McpCatalog) is not None


def configured(app: App) -> bool:
    """Are MCP servers configured (or a catalog made already, with the editor's servers)?"""
    return bool(
        app.settings.mcp.servers
        or (app.trust.trusted and (app.root / ".mcp.json").is_file())
        or has_catalog(app)
    )
