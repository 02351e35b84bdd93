"""YAML read through libyaml's parser where PyYAML has it (its wheels do).

The pure-Python parser took ~4 ms per agent file (16 built-in agents: ~60 ms of every
`ndomo run` and of a server's first turn, before the model request could leave); libyaml
parses the same text into the same nodes and data (the safe constructor is the same), with
the same marks in its errors, several times faster. Without libyaml, the pure parser.
"""

from __future__ import annotations

from typing import Any

import yaml

SafeLoader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def safe_load(text: str) -> Any:
    """`yaml.safe_load`, through libyaml when present."""
    return yaml.load(text, Loader=SafeLoader)  # noqa: S506 - a safe loader (CSafeLoader or SafeLoader)


def compose(text: str) -> yaml.Node | None:
    """`yaml.compose` (the node tree, with each node's line) with the same safe loader."""
    return yaml.compose(text, Loader=SafeLoader)
