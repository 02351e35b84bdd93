"""One "server" sharing the workspace database: runs turns and claims plan tasks concurrently.

Run as `python -m tests.unit.reliability._worker <root> <model_url> <name> <turns>`; prints one
JSON line {name, turns: [...statuses], claimed: [task ids], errors: [...]}.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from ndomo import compose
from ndomo.app import App
from ndomo.runtime.context import TurnRequest
from ndomo.runtime.host import BaseHost
from ndomo.runtime.runtime import Runtime


async def turns(rt: Runtime, n: int, out: dict) -> None:
    # its own session: two turns of one session never run at once, across processes too
    session = (await rt.new_session()).id
    for i in range(n):
        s = await rt.run(TurnRequest(prompt=f"{out['name']} turn {i}", session=session), BaseHost())
        out["turns"].append(s.status)
        if s.error:
            out["errors"].append(s.error)


async def claims(app: App, out: dict) -> None:
    store = await app.store()
    while True:
        try:
            task = await store.next_task_for_agent("smith")
        except Exception as exc:  # noqa: BLE001 - every error is recorded and asserted on by the parent test
            out["errors"].append(f"{type(exc).__name__}: {exc}")
            return
        if task is None:
            return
        out["claimed"].append(task.id)
        try:
            await store.update_task_status(task.id, "done", result=out["name"])
        except Exception as exc:  # noqa: BLE001 - every error is recorded and asserted on by the parent test
            out["errors"].append(f"{type(exc).__name__}: {exc}")
        await asyncio.sleep(0)


async def main(root: str, url: str, name: str, n: int) -> dict:
    app = App(Path(root))
    app.settings.model.base_url = url
    app.settings.model.max_retries = 0
    out: dict = {"name": name, "turns": [], "claimed": [], "errors": []}
    try:
        rt = Runtime.of(app, compose.plugins())
        await asyncio.gather(turns(rt, n, out), claims(app, out))
    finally:
        await app.aclose()
    return out


if __name__ == "__main__":
    root, url, name, n = sys.argv[1:5]
    print(json.dumps(asyncio.run(main(root, url, name, int(n)))), flush=True)
