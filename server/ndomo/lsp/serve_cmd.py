"""`ndomo serve`: run the language server on stdio (default) or TCP."""

from __future__ import annotations

import argparse
import logging
import sys

from ndomo.cli import subcommand


def _setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("--stdio", action="store_true", help="serve on stdin/stdout (default)")
    p.add_argument("--tcp", action="store_true", help="serve on TCP instead of stdio")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=2087)
    p.add_argument("--log-file", default=None, help="also write logs to this file")
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])


@subcommand("serve", _setup)
def serve(ns: argparse.Namespace) -> int:
    """Run the language server (stdio by default, or --tcp)."""
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if ns.log_file:
        handlers.append(logging.FileHandler(ns.log_file, encoding="utf-8"))
    logging.basicConfig(
        level=getattr(logging, ns.log_level.upper()),
        handlers=handlers,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        force=True,
    )
    if ns.log_level != "debug":  # pygls logs every message at INFO
        logging.getLogger("pygls").setLevel(logging.WARNING)
    from ndomo.lsp.server import create_server

    server = create_server()
    if ns.tcp:
        server.start_tcp(ns.host, ns.port)
        return 0
    from ndomo.lsp.process import finish

    finish(server.life.serve_stdio())
    return 0  # not reached: finish() exits
