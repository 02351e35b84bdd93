"""Shell tools (autopilot only): `bash` and `serve`."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ndomo.runtime.context import Engine
    from ndomo.runtime.plugins import Plugins
    from ndomo.runtime.tools import ToolDescriptor


def setup(plugins: Plugins) -> None:
    plugins.tools.later(_tools)
    plugins.on_session_end.add(stop_with_session)


def _tools() -> list[ToolDescriptor]:
    from ndomo.tools.shell.bash import bash
    from ndomo.tools.shell.serve import serve

    return [bash, serve]


async def stop_with_session(rt: Engine, session_id: str) -> None:
    """Served processes stop when their session ends (a new session replaces it)."""
    from ndomo.tools.shell.processes import ServeManager

    manager = rt.app.existing(ServeManager)
    if manager is not None:
        await manager.stop_session(session_id)
