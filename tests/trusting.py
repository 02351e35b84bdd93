"""Tests whose workspace carries its own `.ndomo/` configuration (config.yaml, agents,
reflexes, instructions) stand for a user who trusted that folder: they record it here, in
the user's trust record (the suite points XDG_DATA_HOME at a throw-away folder)."""

from __future__ import annotations

from pathlib import Path

from ndomo.trust import set_trust


def trust(root: Path, *confirmed: str) -> Path:
    set_trust(Path(root), True, list(confirmed))
    return Path(root)
