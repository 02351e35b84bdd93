"""Optional headless Chromium: the DOM after scripts ran, plus console errors.

Used by `check_page` only when a Chromium binary is installed; everything else works
from HTTP + HTML parsing.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil

from ndomo.schema import Schema

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


async def render(binary: str, url: str) -> BrowserPage:
    proc = await asyncio.create_subprocess_exec(
        binary,
        "--headless=new",
        "--disable-gpu",
        "--no-sandbox",
        "--no-first-run",
        "--enable-logging=stderr",
        "--v=0",
        "--virtual-time-budget=5000",
        "--dump-dom",
        url,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), TIME_CAP_S)
    except (TimeoutError, asyncio.CancelledError):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, 9)
        with contextlib.suppress(Exception):
            await proc.wait()
        raise
    return BrowserPage(
        dom=out.decode("utf-8", "replace"),
        console_errors=console_errors(err.decode("utf-8", "replace")),
    )
