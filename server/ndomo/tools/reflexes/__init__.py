"""Reflexes: workspace-defined tool sequences (`.ndomo/reflexes/*.yaml`) offered as
`reflex_<name>` tools in every mode, each step dispatched through the registry."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ndomo.tools.reflexes.catalog import RefreshReflexes, catalog_for, prefetch_hook, provide

if TYPE_CHECKING:
    from ndomo.runtime.plugins import Plugins

__all__ = ["catalog_for", "setup"]


def setup(plugins: Plugins) -> None:
    plugins.tools.providers.append(provide)
    plugins.hooks.add(RefreshReflexes())
    plugins.hooks.add(prefetch_hook())
