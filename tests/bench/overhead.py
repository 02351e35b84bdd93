"""Runtime overhead per tool call: the executor's path (coordinator, events and the transcript
listener, fence, validation, guards, permission policy) against calling the tool function directly.

A real turn context is built the way a turn builds it (real plugins, real agent, a started
turn row), then a no-op tool is called both ways.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from ndomo import compose
from ndomo.app import App
from ndomo.llm.messages import ToolCall
from ndomo.runtime.context import TurnContext, TurnRequest
from ndomo.runtime.executor import run_call
from ndomo.runtime.host import BaseHost
from ndomo.runtime.runtime import Runtime
from ndomo.runtime.tools import tool
from tests.bench.common import Result, summary

N = 3000


class Args(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str = "README.md"


async def _noop(ctx, p: Args) -> str:
    return "ok"


NOOP = tool("bench_noop", Args, description="does nothing; benchmark only")(_noop)


async def run() -> list[Result]:
    with tempfile.TemporaryDirectory() as d:
        app = App(Path(d))
        try:
            plugins = compose.plugins()
            plugins.tools.add(NOOP)
            rt = Runtime(app, plugins)
            state = await rt.session()
            agent = state.agent
            ctx = TurnContext(
                app=app,
                runtime=rt,
                host=BaseHost(),
                request=TurnRequest(prompt="bench"),
                session=state,
                mode=state.mode,
                agent_name=agent,
            )
            ctx.agent = await rt.check_agent(agent)
            store = await app.store()
            ctx.turn_id = (await store.start_turn(state.id, agent, state.mode, "bench")).id
            params = Args()
            direct, full = [], []
            first = await run_call(
                ctx, ToolCall(id="c0", name="bench_noop", arguments={"path": "README.md"})
            )
            if first.status != "done":
                raise RuntimeError(f"the no-op tool did not run through the runtime: {first}")
            for i in range(N):
                t = time.perf_counter()
                await _noop(ctx, params)
                direct.append(time.perf_counter() - t)
                t = time.perf_counter()
                await run_call(
                    ctx, ToolCall(id=f"c{i}", name="bench_noop", arguments={"path": "README.md"})
                )
                full.append(time.perf_counter() - t)
        finally:
            await app.aclose()
    o, b = summary(full), summary(direct)
    return [
        Result(
            "overhead",
            "tool call added, mean",
            o["mean"] - b["mean"],
            b["mean"],
            "ms",
            "≤ 1 ms added",
            o["mean"] - b["mean"] <= 1.0,
        ),
        Result(
            "overhead",
            "tool call added, p95",
            o["p95"] - b["p95"],
            b["p95"],
            "ms",
            "≤ 1 ms added",
            o["p95"] - b["p95"] <= 1.0,
        ),
        Result("overhead", "tool call via runtime p50", o["p50"], b["p50"], "ms", "report", True),
    ]
