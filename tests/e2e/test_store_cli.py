"""The terminal and an editor share one plan store."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

from ndomo.store.store import PlanStore
from tests.e2e.conftest import command


async def _cli(workspace, *args):
    out = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "ndomo", *args, "--json", "--workspace", str(workspace)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


async def test_cli_plan_list_and_task_next_against_the_editors_database(lsp, tmp_path):
    client = await lsp.start(tmp_path)
    store = await PlanStore.open(tmp_path / ".ndomo" / "ndomo.db", workspace=tmp_path)
    try:
        plan = await store.create_plan(
            {"title": "Add login", "overview": "users can log in", "created_by_agent": "foreman"}
        )
        await store.create_tasks(
            plan.id, [{"description": "form", "agent": "craftsman", "files": ["a.py"]}]
        )
    finally:
        await store.close()
    listed = await _cli(tmp_path, "plan", "list")
    assert [p["slug"] for p in listed] == [plan.slug]
    claimed = await _cli(tmp_path, "task", "next", "--agent", "craftsman")
    assert claimed["description"] == "form" and claimed["status"] == "running"
    # the editor sees the claim made from the terminal
    tasks = await command(client, "ndomo.task.list", {"plan": plan.slug})
    assert tasks[0]["status"] == "running"
