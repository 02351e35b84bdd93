"""Import off the event loop what `initialize` does not need but the first turn does.

`initialize` is answered with pygls, the lsp modules and the modes and agents it
advertises (`plugins()`, in a thread). After `initialized`, `core()` (actions, runtime,
store: what every command needs) runs in a thread before the App is published, and
`extras()` (the rest of ndomo, the model client, parsers, web tools …) runs in a background
thread, so the first turn neither waits for those imports nor makes the server's memory
jump; it also builds the models whose build was deferred (ndomo.schema), so the first turn
does not build them either.

What each step loads is decided by the composition root (`ndomo.compose`), which hands
its choice to `ndomo serve` as `Loads`; `install` keeps it for the server's features.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ndomo.actions import ActionRegistry
    from ndomo.runtime.plugins import Plugins

log = logging.getLogger("ndomo.lsp")

# Third-party modules some tool imports lazily on first use (httpx: `web_fetch`, `check_page`).
THIRD_PARTY = ("httpx", "bashlex", "bs4", "tree_sitter")


@dataclass(frozen=True)
class Loads:
    """The composition root's answer to "what does the server load, and when"."""

    actions: Callable[[], ActionRegistry]  # every declared action: the LSP commands
    core: Callable[[], object]  # what every command needs (runs before the App is published)
    plugins: Callable[[], Plugins]  # the runtime's registries (every feature module)
    extras: Callable[[], list[str]]  # the rest of ndomo; returns the modules that failed


_loads: Loads | None = None


def install(loads: Loads) -> None:
    global _loads
    _loads = loads


def _installed() -> Loads:
    if _loads is None:
        raise LookupError("the server's loads are not installed: start it with `ndomo serve`")
    return _loads


def actions() -> ActionRegistry:
    return _installed().actions()


def core() -> None:
    _installed().core()


def plugins() -> Plugins:
    """The runtime's registries, built off the event loop (imports every feature module)."""
    return _installed().plugins()


def extras() -> list[str]:
    """Import the rest of ndomo and the optional libraries; returns what failed (logged)."""
    failed = _installed().extras()
    for mod in THIRD_PARTY:
        try:
            importlib.import_module(mod)
        except Exception:  # noqa: BLE001 - an optional library missing is fine: its tool reports it when used
            log.debug("warm-up could not import %s", mod, exc_info=True)
            failed.append(mod)
    from ndomo.schema import build_all

    log.debug("warm-up built %d deferred models", build_all())
    return failed
