"""Shell tools (autopilot only): `bash` and `serve`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ndomo.tools.shell.bash import bash
from ndomo.tools.shell.processes import ServeManager
from ndomo.tools.shell.serve import serve

if TYPE_CHECKING:
    from ndomo.runtime.context import Engine
    from ndomo.runtime.plugins import Plugins


def setup(plugins: Plugins) -> None:
    plugins.tools.add(bash)
    plugins.tools.add(serve)
    plugins.on_session_end.add(stop_with_session)


async def stop_with_session(rt: Engine, session_id: str) -> None:
    """Served processes stop when their session ends (a new session replaces it)."""
    manager = rt.app.existing(ServeManager)
    if manager is not None:
        await manager.stop_session(session_id)
