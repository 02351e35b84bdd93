"""A mode from outside ndomo, for the tests: registered the way the built-in modes are
(`setup(plugins)` calling `plugins.add_mode`), found through this folder's
`ndomo.features` entry point once the folder is on PYTHONPATH. Nothing in ndomo names it."""

from ndomo.modes.base import AgentMode, ModeContract
from ndomo.runtime.plugins import Plugins

NAME = "sketching"


class SketchingMode(AgentMode):
    name = NAME
    contract = ModeContract(
        summary="Quick sketches: talk it through, keep nothing.", iteration_cap=3
    )


def setup(plugins: Plugins) -> None:
    plugins.add_mode(SketchingMode())
