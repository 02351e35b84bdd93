"""Shell tools (autopilot only): `bash` and `serve`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ndomo.tools.shell.bash import bash
from ndomo.tools.shell.processes import ServeManager
from ndomo.tools.shell.serve import SERVICE_KEY, serve

if TYPE_CHECKING:
    from ndomo.runtime.plugins import Plugins
    from ndomo.runtime.runtime import Runtime


def _install_manager(rt: Runtime) -> None:
    # App.aclose closes services: served processes die with the workspace's app
    rt.app.services.setdefault(SERVICE_KEY, ServeManager())


def setup(plugins: Plugins) -> None:
    plugins.tools.add(bash)
    plugins.tools.add(serve)
    plugins.on_runtime.append(_install_manager)
    plugins.on_runtime.append(_stop_with_session)


def _stop_with_session(rt: Runtime) -> None:
    """Served processes stop when their session ends (a new session replaces it)."""

    async def stop(session_id: str) -> None:
        manager = rt.app.services.get(SERVICE_KEY)
        if manager is not None:
            await manager.stop_session(session_id)

    rt.plugins.on_session_end.append(stop)
