"""Web tools: `web_fetch` (brainstorming only) and `check_page` (every mode, local pages)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ndomo.runtime.plugins import Plugins
    from ndomo.runtime.tools import ToolDescriptor


def setup(plugins: Plugins) -> None:
    plugins.tools.later(_tools)


def _tools() -> list[ToolDescriptor]:
    from ndomo.tools.web.check_page import check_page
    from ndomo.tools.web.web_fetch import web_fetch

    return [web_fetch, check_page]
