"""Optional headless Chromium: the DOM after scripts ran, plus console errors.

Used by `check_page` only when a Chromium binary is installed and bubblewrap runs;
everything else works from HTTP + HTML parsing. A page's scripts are untrusted, so
Chromium runs inside the OS sandbox with no network (its own `--no-sandbox` is used only
there: its setuid/namespace sandbox cannot start inside bubblewrap); a relay gives it the
one local port it checks (security/relay.py) and nothing else.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
from collections.abc import Sequence

from ndomo.schema import Schema
from ndomo.security.relay import Broker, inner_argv

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
TIME_CAP_S = 30.0
_CONSOLE = re.compile(r":(INFO|WARNING|ERROR|FATAL):CONSOLE\(\d+\)\] (.*)$")


class BrowserPage(Schema):
    dom: str
    console_errors: list[str]


def find_chromium() -> str | None:
    env = os.environ.get("NDOMO_CHROMIUM")
    if env:
        return env if os.access(env, os.X_OK) else None
    if os.access("/usr/bin/chromium", os.X_OK):
        return "/usr/bin/chromium"
    return next((p for p in map(shutil.which, CANDIDATES) if p), None)


def console_errors(stderr: str) -> list[str]:
    out = []
    for line in stderr.splitlines():
        m = _CONSOLE.search(line)
        if m and (m.group(1) in ("ERROR", "FATAL") or "Uncaught" in m.group(2)):
            out.append(m.group(2)[:500])
    return out


async def render(
    binary: str, url: str, *, prefix: Sequence[str], relay_port: int | None = None
) -> BrowserPage:
    """Render `url` with Chromium started after the sandbox `prefix` (bubblewrap, no
    network); `relay_port`: the host's 127.0.0.1 port the page is served from."""
    if not prefix:
        raise OSError("Chromium runs only inside the OS sandbox")
    argv = [
        binary,
        "--headless=new",
        "--disable-gpu",
        "--no-sandbox",  # inside bubblewrap only (see the module docstring)
        "--no-first-run",
        "--user-data-dir=/tmp/ndomo-chromium",  # the sandbox's private /tmp
        "--enable-logging=stderr",
        "--v=0",
        "--virtual-time-budget=5000",
        "--dump-dom",
        url,
    ]
    broker = Broker(relay_port) if relay_port is not None else None
    fds: tuple[int, ...] = ()
    if broker is not None:
        argv = [*inner_argv("ask", broker.theirs.fileno(), relay_port or 0), *argv]
        fds = (broker.theirs.fileno(),)
        broker.start()
    try:
        proc = await asyncio.create_subprocess_exec(
            *prefix,
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
            pass_fds=fds,
        )
        if broker is not None:
            broker.release()  # the sandbox holds its end; EOF when it exits
        try:
            out, err = await asyncio.wait_for(proc.communicate(), TIME_CAP_S)
        except (TimeoutError, asyncio.CancelledError):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, 9)
            with contextlib.suppress(Exception):
                await proc.wait()
            raise
    finally:
        if broker is not None:
            await broker.aclose()
    return BrowserPage(
        dom=out.decode("utf-8", "replace"),
        console_errors=console_errors(err.decode("utf-8", "replace")),
    )
