"""Who runs a turn: "<hostname>:<pid>", so start-up recovery can tell a dead owner from a live one.

Several servers (two editors, the CLI) may share one database; a turn still 'running'
is only known to be interrupted when its process is gone. A pid is only checkable on
our own host, so turns owned by other hosts are left alone.
"""

from __future__ import annotations

import functools
import os
import socket
from collections.abc import Callable

PidAlive = Callable[[int], bool]


@functools.cache
def hostname() -> str:
    """Read once: every claim, turn and release of this process names the same owner (a
    host renamed meanwhile would otherwise strand its claims), and the system call is not
    repeated three times on each turn's way to its request."""
    return socket.gethostname()


def process_owner(pid: int | None = None) -> str:
    return f"{hostname()}:{os.getpid() if pid is None else pid}"


def parse_owner(owner: str | None) -> tuple[str, int] | None:
    """(host, pid), or None for a missing or malformed owner."""
    if not owner or ":" not in owner:
        return None
    host, _, raw = owner.rpartition(":")
    try:
        pid = int(raw)
    except ValueError:
        return None
    return (host, pid) if host and pid > 0 else None


def pid_alive(pid: int) -> bool:
    """Signal 0 probes without sending; EPERM means alive but not ours."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    return True


def owner_is_gone(owner: str | None, *, host: str, alive: PidAlive = pid_alive) -> bool:
    """True only when we can tell: same host and the pid is not running.

    A turn without an owner predates owner recording (schema v11); its process was an
    older ndomo that has since been upgraded away, so it counts as gone.
    """
    if owner is None:
        return True
    parsed = parse_owner(owner)
    if parsed is None:
        return False
    owner_host, pid = parsed
    if owner_host != host:
        return False
    return not alive(pid)
