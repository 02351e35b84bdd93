"""An MCP tool call through ndomo against the same call made directly with the MCP SDK.

Two processes of the same local stdio server (tests/fakes/mcp_probe.py, the official SDK's
MCPServer): one started by ndomo's MCP catalog as a user-configured server (sandboxed
where bubblewrap works, as ndomo runs it), one by the SDK's own `stdio_client` +
`ClientSession`. Each round calls `echo` on both, the order alternating; ndomo's side is
`McpCatalog.call` — the connection, the result rendered into the tool's text with its
output cap, the server's state kept. Every answer is checked. Target: the median of the
paired differences ≤ 2 ms (issue 31).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

from tests.bench.common import REPO, Result

PROBE = str(REPO / "tests" / "fakes" / "mcp_probe.py")
ROUNDS = 200
WARMUP = 20
TARGET_MS = 2.0


async def run(rounds: int = ROUNDS) -> list[Result]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    from ndomo.app import App
    from ndomo.config import Settings
    from ndomo.tools.mcp.catalog import catalog_for

    with tempfile.TemporaryDirectory() as d:
        app = App(Path(d))
        servers = {"probe": {"command": sys.executable, "args": [PROBE]}}
        app.settings = Settings.model_validate(
            {**app.settings.model_dump(), "mcp": {"servers": servers}}
        )
        params = StdioServerParameters(command=sys.executable, args=[PROBE], cwd=d)
        try:
            catalog = catalog_for(app)
            server = await catalog.started("probe")
            sandbox = server.connection.sandbox if server.connection else "?"
            async with stdio_client(params) as (read, write), ClientSession(read, write) as sdk:
                await sdk.initialize()
                mine: list[float] = []
                raw: list[float] = []
                for i in range(rounds + WARMUP):
                    text = f"round {i}"
                    for who in ("raw", "ndomo") if i % 2 == 0 else ("ndomo", "raw"):
                        t = time.perf_counter()
                        if who == "raw":
                            got = await sdk.call_tool("echo", {"text": text})
                            took = time.perf_counter() - t
                            answer = got.content[0].text if got.content else ""  # type: ignore[union-attr]
                        else:
                            res = await catalog.call(server, "echo", {"text": text})
                            took = time.perf_counter() - t
                            answer = res.content
                        if f"echo: {text}" not in str(answer):
                            raise RuntimeError(f"{who} answered {str(answer)[:120]!r}")
                        if i >= WARMUP:
                            (raw if who == "raw" else mine).append(took * 1000)
        finally:
            await app.aclose()
    diffs = [m - r for m, r in zip(mine, raw, strict=True)]
    over = statistics.median(diffs)
    return [
        Result(
            "mcp",
            f"tool call overhead over the SDK, local stdio server (median of {len(diffs)} pairs)",
            statistics.median(mine),
            statistics.median(raw),
            "ms",
            f"paired difference p50 ≤ {TARGET_MS:g} ms",
            over <= TARGET_MS,
            {"overhead_ms_p50": round(over, 3), "sandbox": str(sandbox)},
        )
    ]
