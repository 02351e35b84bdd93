"""Tool specs are built once per tool set (what an agent in a mode is offered), not on every
turn; a parameters model's schema is built once (then kept, `runtime/schema_cache.py`)."""

from __future__ import annotations

from dataclasses import replace

from pydantic import BaseModel

from ndomo.runtime import schema_cache
from ndomo.runtime import tools as tools_mod
from ndomo.runtime.tools import tool, tool_specs


class P(BaseModel):
    path: str


class Q(BaseModel):
    pattern: str


async def _run(ctx, p):
    return "ok"


def test_specs_are_cached_per_agent_mode_and_tool_set(monkeypatch, tmp_path):
    tools_mod._SPECS.clear()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(schema_cache, "_loaded", None)
    calls = []

    def counting(model):
        real = model.model_json_schema.__func__

        def count(cls, *a, **kw):
            calls.append(cls)
            return real(cls, *a, **kw)

        monkeypatch.setattr(model, "model_json_schema", classmethod(count))

    counting(P)
    counting(Q)
    a = tool("bench_a", P, description="first")(_run)
    b = tool("bench_b", Q, description="second")(_run)
    first = tool_specs([a, b])
    assert [s.name for s in first] == ["bench_a", "bench_b"] and calls == [P, Q]
    again = tool_specs([a, b])
    assert again == first and calls == [P, Q]  # no spec rebuilt
    assert [s.name for s in tool_specs([a])] == ["bench_a"]  # another tool set (agent or mode)
    changed = replace(b, description="second, reworded")  # e.g. a provider's tool changed
    specs = tool_specs([a, changed])
    assert specs[1].description == "second, reworded" and specs[1].parameters == first[1].parameters
    assert calls == [P, Q]  # new specs, each parameters schema built once
    again.append("x")  # the caller's list is its own
    assert len(tool_specs([a, b])) == 2
