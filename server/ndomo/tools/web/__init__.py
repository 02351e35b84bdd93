"""Web tools: `web_fetch` (brainstorming only) and `check_page` (every mode, local pages)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ndomo.tools.web.check_page import check_page
from ndomo.tools.web.web_fetch import web_fetch

if TYPE_CHECKING:
    from ndomo.runtime.plugins import Plugins


def setup(plugins: Plugins) -> None:
    plugins.tools.add(web_fetch)
    plugins.tools.add(check_page)
