"""`ndomo resident`: is one running for this interpreter, stop it (`--stop`); `--serve` is
how `ndomo run` starts one (its spec on stdin, not for people)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from functools import partial

from ndomo.terminal.args import EXIT_FAILED, EXIT_USAGE, Subcommand
from ndomo.terminal.resident import client, server


def _setup(p: argparse.ArgumentParser) -> None:
    what = p.add_mutually_exclusive_group()
    what.add_argument("--stop", action="store_true", help="stop it (a run in progress finishes)")
    what.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)


def command(run: server.Run) -> Subcommand:
    """`ndomo resident`, its children running `run(argv)` (the command in-process)."""
    return Subcommand(
        "resident",
        _setup,
        partial(_handle, run=run),
        "The process `ndomo run` hands its turns to, so a run starts in ~0.1 s "
        f"(started by a run; exits after ${client.ENV_IDLE} s idle, default "
        f"{client.IDLE_DEFAULT:.0f}; ${client.ENV_SWITCH}=0 turns it off).",
    )


def _handle(ns: argparse.Namespace, run: server.Run) -> int:
    if ns.serve:
        if sys.stdin.isatty():
            print("ndomo resident --serve: `ndomo run` starts it", file=sys.stderr)
            return EXIT_USAGE
        try:
            spec = json.loads(sys.stdin.buffer.read())
        except ValueError:
            spec = None
        if not isinstance(spec, dict) or "where" not in spec or "key" not in spec:
            print(
                "ndomo resident --serve: stdin holds no resident's spec (`ndomo run` starts it)",
                file=sys.stderr,
            )
            return EXIT_USAGE
        return server.serve(spec, run)
    where = client.folder()
    if where is None:
        print(
            "ndomo resident: no private folder for its socket (another user's, or open to "
            f"others); set ${client.ENV_DIR} to a folder of yours",
            file=sys.stderr,
        )
        return EXIT_FAILED
    key = client.identity()
    pid = server.running(server.lock_path(where, key))
    if ns.stop:
        stopped = pid is not None and client.stop(where, key)
        print("stopped" if stopped else "none running")
        return 0
    if pid is None and client.switched_off():
        print(f"none running; off ({client.ENV_SWITCH}={os.environ[client.ENV_SWITCH]})")
    elif pid is None:
        print("none running; the next `ndomo run` starts one")
    else:
        print(f"running: pid {pid}, socket {client.socket_path(where, key)}")
    return 0
