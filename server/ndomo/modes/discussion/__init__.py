"""Discussion: ultra-concise planning; writes only to design artifacts; ends in commit_plan."""

from ndomo.modes.discussion.mode import DiscussionMode
from ndomo.runtime.plugins import Plugins


def setup(plugins: Plugins) -> None:
    plugins.add_mode(DiscussionMode())
