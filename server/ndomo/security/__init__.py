"""Security: workspace path confinement, shell permission decisions, the shell runner."""

from ndomo.security.paths import PathRefused, is_secret, relative_to_workspace, resolve_in_workspace
from ndomo.security.run import ShellResult, run_shell
from ndomo.security.shell import ShellDecision, decide
from ndomo.security.shell_rules import validate_rules

__all__ = [
    "PathRefused",
    "ShellDecision",
    "ShellResult",
    "decide",
    "is_secret",
    "relative_to_workspace",
    "resolve_in_workspace",
    "run_shell",
    "validate_rules",
]
