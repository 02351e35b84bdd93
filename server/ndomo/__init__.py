"""ndomo: a language server that puts a disciplined pair of coding agents into any LSP editor."""

import sys

__version__ = "0.1.0"

# httpx's package imports its command-line client (`httpx._main`: click, pygments, rich)
# whenever those are installed (click comes with the MCP SDK's uvicorn), ~25 ms of every
# process's start that ndomo never uses. A None entry makes that import fail as httpx
# expects when they are missing (it then defines a `main` that explains); the client
# itself is unaffected. Set before anything imports httpx, and only if nothing has yet.
if "httpx" not in sys.modules:
    sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
