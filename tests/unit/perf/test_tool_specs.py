"""Tool schemas are built once per tool set (what an agent in a mode is offered), not on every turn."""

from __future__ import annotations

from dataclasses import replace

from pydantic import BaseModel

from ndomo.runtime import tools as tools_mod
from ndomo.runtime.tools import tool, tool_specs


class P(BaseModel):
    path: str


async def _run(ctx, p):
    return "ok"


def test_specs_are_cached_per_agent_mode_and_tool_set(monkeypatch):
    tools_mod._SPECS.clear()
    calls = []
    real = P.model_json_schema.__func__

    def counting(cls, *a, **kw):
        calls.append(cls)
        return real(cls, *a, **kw)

    monkeypatch.setattr(P, "model_json_schema", classmethod(counting))
    a = tool("bench_a", P, description="first")(_run)
    b = tool("bench_b", P, description="second")(_run)
    first = tool_specs([a, b])
    assert [s.name for s in first] == ["bench_a", "bench_b"] and len(calls) == 2
    again = tool_specs([a, b])
    assert again == first and len(calls) == 2  # no schema rebuilt
    tool_specs([a])  # another tool set (another agent or mode)
    assert len(calls) == 3
    changed = replace(b, description="second, reworded")  # e.g. a provider's tool changed
    specs = tool_specs([a, changed])
    assert specs[1].description == "second, reworded" and len(calls) == 5
    again.append("x")  # the caller's list is its own
    assert len(tool_specs([a, b])) == 2
