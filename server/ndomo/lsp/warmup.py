"""Import off the event loop what `initialize` does not need but the first turn does.

`initialize` is answered with only pygls and the light lsp modules loaded. After
`initialized`, `core()` (actions, runtime, store: what every command needs) runs in a
thread before the App is published, `plugins()` builds the runtime's registries (every
tool module and its imports: bashlex's parser tables, bs4 …) in a thread too, so the event
loop keeps answering meanwhile, and `extras()` (model SDK, parsers, web tools …)
runs in a background thread, so the first turn neither waits for those imports nor
makes the server's memory jump; it also builds the models whose build was deferred
(ndomo.schema), so the first turn does not build them either.
"""

from __future__ import annotations

import importlib
import logging
import pkgutil

log = logging.getLogger("ndomo.lsp")

CORE = (
    "ndomo.app",
    "ndomo.runtime.runtime",
    "ndomo.features.turn",
    "ndomo.lsp.host",
    "ndomo.store.store",
)
# Third-party modules some tool or the model client imports lazily on first use.
THIRD_PARTY = ("openai", "httpx", "bashlex", "bs4", "tree_sitter")
SKIP = ("ndomo.__main__",)


def core() -> None:
    from ndomo.actions import load_actions

    for mod in CORE:
        importlib.import_module(mod)
    load_actions()


def plugins():
    """The runtime's registries, built off the event loop (imports every feature module)."""
    from ndomo.runtime.plugins import build_plugins

    return build_plugins()


def _ndomo_modules() -> list[str]:
    import ndomo

    return [m.name for m in pkgutil.walk_packages(ndomo.__path__, "ndomo.") if m.name not in SKIP]


def extras() -> list[str]:
    """Import every ndomo module and the optional libraries; returns what failed (logged)."""
    failed = []
    for mod in (*_ndomo_modules(), *THIRD_PARTY):
        try:
            importlib.import_module(mod)
        except Exception:  # an optional library missing is fine: its tool reports it when used
            log.debug("warm-up could not import %s", mod, exc_info=True)
            failed.append(mod)
    from ndomo.schema import build_all

    log.debug("warm-up built %d deferred models", build_all())
    return failed
