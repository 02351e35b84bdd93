"""A throwaway mode and agent that nothing in ndomo names, for the one-source-of-names tests.

The mode is a package outside ndomo (tests/plugins/throwaway), registered through the same
`setup(plugins)` API as the built-in modes and found by its `ndomo.features` entry point
once its folder is on PYTHONPATH; the agent is one file in a workspace's `.ndomo/agents/`.
Adding them changes nothing else.
"""

from __future__ import annotations

import os
from pathlib import Path

PLUGIN_PATH = Path(__file__).resolve().parent / "plugins" / "throwaway"
MODE = "sketching"
MODE_SUMMARY = "Quick sketches: talk it through, keep nothing."
AGENT = "tinker"
AGENT_DESCRIPTION = "Tinker — tries small ideas out loud; a throwaway agent for the tests."


def add_agent(root: Path, default_mode: str | None = MODE) -> Path:
    """Write the throwaway agent into `root`'s `.ndomo/agents/` (its default mode: the
    throwaway mode, which then must be registered)."""
    folder = root / ".ndomo" / "agents"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{AGENT}.md"
    path.write_text(
        f"---\ndescription: {AGENT_DESCRIPTION}\nmode: primary\n"
        + (f"default_mode: {default_mode}\n" if default_mode else "")
        + "permission:\n  edit: deny\n  bash: deny\n---\nSketch ideas; change nothing.\n"
    )
    return path


def env(base: dict[str, str] | None = None) -> dict[str, str]:
    """An environment whose Python finds the throwaway mode's entry point."""
    out = dict(os.environ if base is None else base)
    out["PYTHONPATH"] = os.pathsep.join(p for p in (str(PLUGIN_PATH), out.get("PYTHONPATH")) if p)
    return out
