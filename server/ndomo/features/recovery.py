"""Start-up crash recovery: turns left 'running' by a dead process are marked 'interrupted'.

Runs once per App, as a background task scheduled when its first Runtime is built (the
LSP server builds it at ready, `ndomo run` at start), so it never delays a request.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from ndomo.runtime.plugins import Plugins

if TYPE_CHECKING:
    from ndomo.app import App
    from ndomo.runtime.context import Engine

log = logging.getLogger("ndomo.recovery")


class TurnRecovery:
    """The App's one recovery (`app.instance`), holding the task so `App.aclose` waits for
    it before closing the store."""

    def __init__(self, task: asyncio.Task[int]) -> None:
        self.task = task

    async def wait(self) -> int:
        return await asyncio.shield(self.task)

    async def aclose(self) -> None:
        # The task logs its own failure; closing must go on. Only our own cancel propagates.
        await asyncio.gather(self.task, return_exceptions=True)


async def recover_interrupted_turns(app: App) -> int:
    try:
        store = await app.store()
        marked = await store.mark_interrupted_turns()
    except Exception:  # noqa: BLE001 - recovery must not stop the server starting
        log.exception("could not mark interrupted turns")
        return 0
    if marked:
        log.info("marked %d turn(s) of stopped processes as interrupted", marked)
    return marked


def schedule(rt: Engine) -> None:
    app = rt.app
    if app.existing(TurnRecovery) is not None or app.no_store_reason is not None:
        return
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # built outside a loop: the next Runtime built inside one does it
        return
    app.instance(
        TurnRecovery, lambda: TurnRecovery(loop.create_task(recover_interrupted_turns(app)))
    )


def setup(plugins: Plugins) -> None:
    plugins.on_runtime.append(schedule)
