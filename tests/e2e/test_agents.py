"""The craftsman's threshold through `ndomo run` (a real subprocess) and a fake model process."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def step(name, **arguments):
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


@pytest.fixture
def fake_process(tmp_path):
    """Start `python -m tests.fakes.fake_model --script …`; yields a function taking the steps."""
    procs = []

    def start(steps):
        script = tmp_path / "script.json"
        script.write_text(json.dumps(steps))
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.fakes.fake_model",
                "--script",
                str(script),
                "--record",
                str(tmp_path / "requests.jsonl"),
            ],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        procs.append(proc)
        line = proc.stdout.readline().split()
        assert line and line[0] == "READY", line
        return line[1]

    yield start
    for proc in procs:
        proc.terminate()
        proc.wait(10)


async def ndomo_run(workspace: Path, url: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "NDOMO_BASE_URL": url, "NDOMO_API_KEY": "test"}
    return await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "ndomo", "run", *args, "--workspace", str(workspace), "--json"],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )


async def test_state4_through_ndomo_run_rolls_back_and_names_the_foreman(tmp_path, fake_process):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_text("A = 1\n")
    (ws / "b.py").write_text("B = 2\n")
    names = ["a.py", "b.py", "c.py", "d.py", "e.py"]
    url = fake_process(
        [
            step("plan_create", title="Wide change", overview="touches many files", slug="wide"),
            step(
                "task_create_batch",
                plan_id="wide",
                tasks=[{"description": "all", "files": names, "agent": "craftsman"}],
            ),
            *[step("write", path=n, content=f"# changed {n}\n") for n in names],
            step("write", path="f.py", content="# sixth\n"),
            {"text": "never reached"},
        ]
    )
    done = await ndomo_run(
        ws, url, "change everything", "--agent", "craftsman", "--mode", "autopilot"
    )
    assert done.returncode == 3, done.stderr  # blocked: a hand-back
    summary = json.loads(done.stdout[done.stdout.index("{\n") :])
    assert summary["status"] == "blocked" and "foreman" in summary["handback"]
    assert (ws / "a.py").read_bytes() == b"A = 1\n" and (ws / "b.py").read_bytes() == b"B = 2\n"
    for gone in ("c.py", "d.py", "e.py", "f.py"):
        assert not (ws / gone).exists()


async def test_state1_through_ndomo_run_leaves_no_plan(tmp_path, fake_process):
    ws = tmp_path / "ws"
    ws.mkdir()
    url = fake_process(
        [
            step("write", path="one.py", content="x = 1\n"),
            step("write", path="two.py", content="y = 2\n"),
            step("write", path="three.py", content="z = 3\n"),
            {"text": "two files changed; the third needs a plan"},
        ]
    )
    done = await ndomo_run(ws, url, "small fix", "--agent", "craftsman", "--mode", "autopilot")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout[done.stdout.index("{\n") :])
    assert sorted(summary["modified"]) == ["one.py", "two.py"]
    assert not (ws / "three.py").exists()
    listing = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "ndomo", "plan", "list", "--json", "--workspace", str(ws)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert listing.returncode == 0, listing.stderr
    assert json.loads(listing.stdout) == []
