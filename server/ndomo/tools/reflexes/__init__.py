"""Reflexes: workspace-defined tool sequences (`.ndomo/reflexes/*.yaml`) offered as
`reflex_<name>` tools in every mode, each step dispatched through the registry."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ndomo.tools.reflexes.catalog import RefreshReflexes, catalog_for, prefetch_hook, provide
from ndomo.tools.reflexes.loader import load_reflexes
from ndomo.tools.reflexes.model import Reflex, ReflexProblem, ReflexRun
from ndomo.tools.reflexes.runner import run_reflex

if TYPE_CHECKING:
    from ndomo.runtime.plugins import Plugins

__all__ = [
    "load_reflexes",
    "run_reflex",
    "catalog_for",
    "Reflex",
    "ReflexProblem",
    "ReflexRun",
    "setup",
]


def setup(plugins: Plugins) -> None:
    plugins.tools.providers.append(provide)
    plugins.hooks.add(RefreshReflexes())
    plugins.hooks.add(prefetch_hook())
