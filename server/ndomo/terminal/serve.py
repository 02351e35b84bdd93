"""`ndomo serve`: run the language server on stdio (default) or TCP."""

from __future__ import annotations

import argparse
import logging
import sys
from typing import TYPE_CHECKING

from ndomo.terminal.args import Subcommand

if TYPE_CHECKING:
    from ndomo.lsp.warmup import Loads


def _setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("--stdio", action="store_true", help="serve on stdin/stdout (default)")
    p.add_argument("--tcp", action="store_true", help="serve on TCP instead of stdio")
    p.add_argument(
        "--host", default="127.0.0.1", help="address to listen on with --tcp (default: %(default)s)"
    )
    p.add_argument(
        "--port", type=int, default=2087, help="port to listen on with --tcp (default: %(default)s)"
    )
    p.add_argument("--log-file", default=None, help="also write logs to this file")
    p.add_argument(
        "--log-level",
        default="info",
        choices=["debug", "info", "warning", "error"],
        help="least severe log level sent to the editor's log (stderr gets warnings and errors)",
    )


TTY_NOTE = (
    "ndomo serve is the language server: it speaks LSP on stdin/stdout and waits for an editor to start it. "
    "Set up your editor as docs/editors.md says (VS Code: editors/vscode, Neovim: editors/nvim); "
    'for one turn in a terminal use `ndomo run "..."`. Ctrl-C quits.'
)


def command(loads: Loads) -> Subcommand:
    """`ndomo serve`, its server loading what `loads` says (from the composition root)."""
    return Subcommand(
        "serve",
        _setup,
        lambda ns: serve(ns, loads),
        "Run the language server (stdio by default, or --tcp).",
    )


def serve(ns: argparse.Namespace, loads: Loads) -> int:
    """Run the language server (stdio by default, or --tcp)."""
    level = getattr(logging, ns.log_level.upper())
    stderr = logging.StreamHandler(sys.stderr)  # what an editor shows as errors: warnings and worse
    stderr.setLevel(max(level, logging.WARNING))
    handlers: list[logging.Handler] = [stderr]
    if ns.log_file:
        handlers.append(logging.FileHandler(ns.log_file, encoding="utf-8"))
    logging.basicConfig(
        level=level,
        handlers=handlers,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        force=True,
    )
    if ns.log_level != "debug":
        # pygls logs every message at INFO, httpx every page `web_fetch` gets (the model
        # client logs its requests at DEBUG): a line to the editor on every message is ~0.4
        # ms of each first token. `--log-level debug` keeps both.
        for name in ("pygls", "httpx"):
            logging.getLogger(name).setLevel(logging.WARNING)
    from ndomo.lsp import warmup
    from ndomo.lsp.features import create_server
    from ndomo.lsp.logs import LogMessageHandler
    from ndomo.lsp.process import finish, life_of

    warmup.install(loads)

    if not ns.tcp and sys.stdin.isatty():  # a person typed it: say what this is
        print(TTY_NOTE, file=sys.stderr, flush=True)
    server = create_server()
    # INFO and up: the editor's log (lifecycle tells it when the client is ready)
    logging.getLogger().addHandler(LogMessageHandler(server, level))
    if ns.tcp:
        server.start_tcp(ns.host, ns.port)
        return 0
    finish(life_of(server).serve_stdio())
    return 0  # not reached: finish() exits
