"""Size of a turn's first model request, per agent and mode: bytes of JSON (messages + tools,
compact UTF-8, what the OpenAI SDK sends) and estimated tokens (bytes / 3), captured at the
fake server. Prints a table for docs/performance.md. Target: under 10,000 bytes."""

from __future__ import annotations

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


async def measure() -> list[dict]:
    rows = []
    with FakeModel() as fake, tempfile.TemporaryDirectory() as d:
        app = App(Path(d))
        app.settings.model.base_url = fake.url
        app.settings.model.max_retries = 0
        try:
            rt = Runtime(app, compose.plugins())
            for agent, mode in CASES:
                n = len(fake.chat_requests())
                await rt.run(TurnRequest(prompt="hello", agent=agent, mode=mode), BaseHost())
                body = fake.chat_requests()[n]["body"]
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
                        "total": messages + tools,
                        "tokens": estimate_tokens(messages + tools),
                    }
                )
                await rt.new_session()
        finally:
            await app.aclose()
    return rows


def table(rows: list[dict]) -> str:
    out = [
        "| agent · mode | tools | system prompt B | messages B | tool schemas B | total B | ≈ tokens |",
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
            f"{r['agent']} {r['mode']} first request",
            r["total"],
            TARGET,
            "B",
            f"< {TARGET:,} B",
            r["total"] < TARGET,
            extra=r,
        )
        for r in rows
    ]
