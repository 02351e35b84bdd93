"""`ndomo run "prompt"`: one headless turn, streamed to the terminal."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from ndomo.cli import find_workspace, subcommand


def _setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("prompt", help="what to ask; a /slash command runs without the model")
    p.add_argument("--agent", "-a", default=None)
    p.add_argument("--mode", "-m", default=None, choices=["discussion", "brainstorming", "autopilot"])
    p.add_argument("--workspace", "-w", default=None)
    p.add_argument("--session", default=None, help="continue this session (default: the latest)")
    p.add_argument("--task", dest="task_id", default=None, help="execute this plan task")
    p.add_argument("--yes", "-y", action="store_true", help="approve every ask (non-interactive runs deny them)")
    p.add_argument("--json", action="store_true", help="print the turn summary as JSON at the end")


@subcommand("run", _setup)
def run(ns: argparse.Namespace) -> int:
    """Run one turn headless and print the answer and tool activity."""
    from ndomo.app import App
    from ndomo.runtime.context import TurnRequest
    from ndomo.runtime.host import TerminalHost
    from ndomo.runtime.runtime import Runtime

    root = Path(ns.workspace) if ns.workspace else find_workspace(Path.cwd())

    async def go():
        app = await asyncio.to_thread(App.load, root)
        for p in app.config_problems:
            print(f"ndomo: config: {p.describe()} (default used)", file=sys.stderr)
        try:
            host = TerminalHost(assume_yes=ns.yes)
            request = TurnRequest(prompt=ns.prompt, agent=ns.agent, mode=ns.mode, session=ns.session, task_id=ns.task_id)
            return await Runtime.of(app).run(request, host), host
        finally:
            await app.aclose()

    try:
        summary, host = asyncio.run(go())
    except KeyboardInterrupt:
        print("\n[cancelled]", file=sys.stderr)
        return 130
    if summary.payload is not None and not ns.json:
        import yaml

        print(yaml.safe_dump(summary.payload, sort_keys=False).rstrip())
    if summary.turn_id is None and summary.error:
        print(f"ndomo: {summary.error}", file=sys.stderr)
    if ns.json:
        print(summary.model_dump_json(indent=2))
    elif summary.answer and not any(e.kind == "text" for e in host.events):
        print(summary.answer)
    return {"done": 0, "blocked": 3, "capped": 4, "cancelled": 130}.get(summary.status, 1)
