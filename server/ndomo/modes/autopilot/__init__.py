"""Autopilot: plans, acts, verifies, re-plans; follows a committed plan as guidance."""

from ndomo.modes.autopilot.mode import AutopilotMode
from ndomo.runtime.plugins import Plugins


def setup(plugins: Plugins) -> None:
    plugins.add_mode(AutopilotMode())
