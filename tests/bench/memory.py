"""Memory of `ndomo serve`: RSS idle, after the first turn, and after 200 scripted turns.

"Idle" is sampled once the server has settled after start-up (the background warm-up
imports are done: no thread switched for a while, see tests/bench/idle.py), so the
growth measured is what turns add, not what start-up had still to load. The fake model
runs in its own process.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from lsprotocol import types

from tests.bench.common import Result, rss_mb
from tests.bench.fake_proc import FakeProc
from tests.bench.idle import settle
from tests.bench.lsp_client import NDOMO, server_pid, start, stop

TURNS = 200


async def run() -> list[Result]:
    with (
        tempfile.TemporaryDirectory() as d,
        FakeProc(default_text="a short scripted answer " * 20) as fake,
    ):
        client, _ = await start(NDOMO, Path(d), {"NDOMO_BASE_URL": fake.url})
        try:
            pid = server_pid(client)
            await client.workspace_execute_command_async(
                types.ExecuteCommandParams(command="ndomo.mode.get", arguments=[{}])
            )
            await settle(pid)  # start-up and its background warm-up are over
            idle = rss_mb(pid)

            async def turn(i: int) -> None:
                res = await client.workspace_execute_command_async(
                    types.ExecuteCommandParams(
                        command="ndomo.turn", arguments=[{"prompt": f"turn {i}"}]
                    )
                )
                if getattr(res, "status", None) not in (None, "done") and (
                    not isinstance(res, dict) or res.get("status") != "done"
                ):
                    raise RuntimeError(f"turn {i} did not finish: {res}")

            await turn(0)
            warm = rss_mb(pid)
            for i in range(1, TURNS + 1):
                await turn(i)
            await asyncio.sleep(0.5)
            after = rss_mb(pid)
        finally:
            await stop(client)
    return [
        Result(
            "memory",
            f"RSS after {TURNS} turns vs idle",
            after,
            idle,
            "MB",
            "growth ≤ 10%",
            after <= idle * 1.10,
        ),
        Result(
            "memory",
            f"RSS after {TURNS} turns vs after 1st turn",
            after,
            warm,
            "MB",
            "report (leak check)",
            True,
        ),
    ]
