"""`ndomo acp`: serve one ACP client over stdin/stdout until it goes away.

stdout carries the protocol only: the process's own fd 1 is pointed at stderr before
anything runs, so a stray print (ours, a library's, a child's) cannot corrupt a message.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, cast

from ndomo.terminal.args import Subcommand

if TYPE_CHECKING:
    from acp.interfaces import Agent

    from ndomo.runtime.plugins import Plugins

STDIO_LIMIT = 50 * 1024 * 1024  # an embedded file rides in one line of JSON


def _setup(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--log-level",
        default="WARNING",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="what ndomo logs on stderr (the editor's agent log)",
    )


def command(plugins: Callable[[], Plugins]) -> Subcommand:
    """`ndomo acp`, its turns run with the features `plugins` builds."""
    return Subcommand(
        "acp",
        _setup,
        partial(run, plugins=plugins),
        "Serve an editor over the Agent Client Protocol on stdin/stdout (Zed, JetBrains, …).",
    )


def run(ns: argparse.Namespace, plugins: Callable[[], Plugins]) -> int:
    from ndomo import startup

    # the registries are built on the client's first request, at no point this process
    # marks: the collector is not held for ACP (ndomo.startup)
    startup.release()
    logging.basicConfig(level=ns.log_level, stream=sys.stderr)
    protocol_out = os.fdopen(os.dup(sys.stdout.fileno()), "wb", buffering=0)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    try:
        asyncio.run(_serve(plugins, protocol_out))
    except KeyboardInterrupt:
        return 130
    return 0


async def _serve(plugins: Callable[[], Plugins], protocol_out) -> None:
    from acp.stdio import stdio_streams

    from acp import run_agent
    from ndomo.acp.agent import NdomoAgent

    stdout, sys.stdout = sys.stdout, protocol_out
    try:
        reader, writer = await stdio_streams(limit=STDIO_LIMIT)
    finally:
        sys.stdout = stdout
    agent = NdomoAgent(plugins)
    try:
        # The SDK routes each method to the handler of its name; a method ndomo does not
        # implement (fork, resume, …) is answered "method not found".
        await run_agent(cast("Agent", agent), writer, reader)
    finally:  # the client is gone (stdin closed): no turn or command outlives it
        await agent.aclose()
