"""The modes and agents the server advertises in its `initialize` result.

`capabilities.experimental.ndomo = {"modes": [...], "agents": [...]}` (ndomo.catalog's
lists): editors build their mode and agent menus from it before any command runs. The
runtime's plugins built here are kept for the App the `initialized` notification builds.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from ndomo.lsp import warmup

if TYPE_CHECKING:
    from ndomo.features.catalog import Catalog
    from ndomo.lsp.server import NdomoServer

log = logging.getLogger("ndomo.lsp")


def _catalog(server: NdomoServer) -> dict[str, Any]:
    from ndomo.agents.loader import load_agents
    from ndomo.config import load_settings
    from ndomo.features.catalog import build_catalog
    from ndomo.trust import session_options, view

    root = server.workspace_roots()[0]  # the first folder's (each folder may add its own agents)
    plugins = server.plugins = warmup.plugins()
    options, restricted = session_options(server.init_options)
    trust = view(root, restricted=restricted)
    # reported at `initialized`
    settings, _problems = load_settings(root, options, grant=trust.grant)
    agents = load_agents(root if trust.trusted else None, plugins.modes)
    cat = build_catalog(plugins.modes, agents, settings)
    for problem in cat.problems:  # a default naming a mode or agent nobody registered
        log.warning("config: %s", problem)
    return {**cat.model_dump(), "trust": trust.state}  # the first folder's


async def advertise(server: NdomoServer) -> dict[str, Any]:
    """The `experimental.ndomo` capability; never fails the initialize request."""
    try:
        return await asyncio.to_thread(_catalog, server)
    except Exception as exc:  # a broken feature or agent folder: the first command reports it
        log.exception("listing modes and agents for the initialize result failed")
        return {"modes": [], "agents": [], "problems": [f"{type(exc).__name__}: {exc}"]}


def current(server: NdomoServer) -> Catalog | None:
    """The catalog without waiting: from the App's runtime and loaded agents once there,
    else the lists advertised at initialize (None before that)."""
    from ndomo.features.catalog import Catalog, build_catalog

    app = server.app
    if app is not None:
        rt, agents = app.runtime, app.agents
        if rt is not None and agents is not None:
            return build_catalog(rt.plugins.modes, agents, app.settings)
    return Catalog.model_validate(server.catalog) if server.catalog else None


def pick(server: NdomoServer, *, agent_role: str, mode_role: str) -> tuple[str, str] | None:
    """(agent, mode) by purpose (see ndomo.features.catalog.pick); None when unknown yet or none fits."""
    from ndomo.features.catalog import pick as pick_in

    cat = current(server)
    return None if cat is None else pick_in(cat, agent_role=agent_role, mode_role=mode_role)
