"""Workspace file tools: read, glob, grep, write, edit, apply_patch.

Every path goes through `resolve_in_workspace`; every change through `change_file`
(recorded for undo, counted as modified); markdown plans written here are also committed;
an edit's result carries what the editor then reports for the file (problems.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ndomo.runtime.plugins import Plugins
    from ndomo.runtime.tools import ToolDescriptor


def setup(plugins: Plugins) -> None:
    from ndomo.tools.files.problems import LeftErrors

    plugins.tools.later(_tools)
    plugins.hooks.add(LeftErrors())


def _tools() -> list[ToolDescriptor]:
    from ndomo.tools.files.apply_patch import apply_patch
    from ndomo.tools.files.read import read
    from ndomo.tools.files.search import glob, grep
    from ndomo.tools.files.write import edit, write

    return [read, glob, grep, write, edit, apply_patch]
