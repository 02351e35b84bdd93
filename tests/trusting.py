"""Tests whose workspace carries its own `.ndomo/` configuration (config.yaml, agents,
reflexes, instructions) stand for a user who trusted that folder: they record it here, in
the user's trust record (the suite points XDG_DATA_HOME at a throw-away folder; a harness
that gives its editor another one passes it as `data_home`)."""

from __future__ import annotations

import os
from pathlib import Path

from ndomo.trust import set_trust


def trust(root: Path, *confirmed: str, data_home: Path | None = None) -> Path:
    """Record `root` as trusted (with these confirmations) before ndomo loads it."""
    if data_home is None:
        set_trust(Path(root), True, list(confirmed))
        return Path(root)
    before = os.environ.get("XDG_DATA_HOME")
    os.environ["XDG_DATA_HOME"] = str(data_home)
    try:
        set_trust(Path(root), True, list(confirmed))
    finally:
        if before is None:
            del os.environ["XDG_DATA_HOME"]
        else:
            os.environ["XDG_DATA_HOME"] = before
    return Path(root)
