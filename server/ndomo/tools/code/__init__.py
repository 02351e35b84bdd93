"""Code-navigation tools over the `ndomo.lib.code` primitives: file_map, outline_file,
find_symbol, find_references. Read-only, offered in every mode."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ndomo.runtime.plugins import Plugins
    from ndomo.runtime.tools import ToolDescriptor


def setup(plugins: Plugins) -> None:
    plugins.tools.later(_tools)


def _tools() -> list[ToolDescriptor]:
    from ndomo.tools.code.tools import TOOLS

    return list(TOOLS)
