"""Size of a turn's first model request, per agent and mode: the whole JSON body as sent (its
Content-Length at the fake server: model, messages, tools and every parameter), with the
messages and tool schemas shown apart, and estimated tokens (bytes / 3). The workspace is
always WORKSPACE (its path is in the system prompt, so its length is stated), with no user
configuration (no MCP servers). Prints a table for docs/performance.md. Target: under
10,000 bytes."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from ndomo import compose
from ndomo.app import App
from ndomo.llm.budget import json_size
from ndomo.llm.capabilities import estimate_tokens
from ndomo.runtime.context import TurnRequest
from ndomo.runtime.host import BaseHost
from ndomo.runtime.runtime import Runtime
from tests.bench.common import Result
from tests.fakes.fake_model import FakeModel

CASES = [
    ("craftsman", "autopilot"),
    ("foreman", "discussion"),
    ("foreman", "brainstorming"),
    ("craftsman", "discussion"),
]
TARGET = 10_000
WORKSPACE = Path("/tmp/ndomo-reqsize")  # 18 characters, in the system prompt


async def measure() -> list[dict]:
    rows = []
    shutil.rmtree(WORKSPACE, ignore_errors=True)
    WORKSPACE.mkdir(parents=True)
    saved = {k: os.environ.get(k) for k in ("XDG_CONFIG_HOME", "XDG_DATA_HOME")}
    with FakeModel() as fake, tempfile.TemporaryDirectory() as home:
        os.environ["XDG_CONFIG_HOME"] = f"{home}/config"  # no user config: no MCP servers
        os.environ["XDG_DATA_HOME"] = f"{home}/data"
        app = App(WORKSPACE)
        app.settings.model.base_url = fake.url
        app.settings.model.max_retries = 0
        try:
            rt = Runtime(app, compose.plugins())
            for agent, mode in CASES:
                n = len(fake.chat_requests())
                await rt.run(TurnRequest(prompt="hello", agent=agent, mode=mode), BaseHost())
                sent = fake.chat_requests()[n]
                body = sent["body"]
                system = json_size(body["messages"][:1])
                messages = json_size(body["messages"])
                tools = json_size(body.get("tools", []))
                rows.append(
                    {
                        "agent": agent,
                        "mode": mode,
                        "system": system,
                        "messages": messages,
                        "tools": tools,
                        "n_tools": len(body.get("tools", [])),
                        "total": int(sent["headers"]["content-length"]),
                        "tokens": estimate_tokens(int(sent["headers"]["content-length"])),
                    }
                )
                await rt.new_session()
        finally:
            await app.aclose()
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
            shutil.rmtree(WORKSPACE, ignore_errors=True)
    return rows


def table(rows: list[dict]) -> str:
    out = [
        "| agent · mode | tools | system prompt B | messages B | tool schemas B | whole body B | ≈ tokens |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        out.append(
            f"| {r['agent']} · {r['mode']} | {r['n_tools']} | {r['system']:,} | {r['messages']:,} | "
            f"{r['tools']:,} | {r['total']:,} | {r['tokens']:,} |"
        )
    return "\n".join(out)


async def run() -> list[Result]:
    rows = await measure()
    print(table(rows))
    return [
        Result(
            "reqsize",
            f"{r['agent']} {r['mode']} first request body as sent",
            r["total"],
            TARGET,
            "B",
            f"< {TARGET:,} B",
            r["total"] < TARGET,
            extra=r,
        )
        for r in rows
    ]
