"""The tools inside real turns: the fake model calls them, the runtime records the edits."""

from __future__ import annotations

import pytest

from ndomo.runtime.context import TurnRequest
from ndomo.runtime.host import BaseHost
from tests.fakes.fake_model import FakeModel


@pytest.fixture
def fake():
    with FakeModel(default_text="done") as fm:
        yield fm


@pytest.fixture
def model(app, fake):
    app.settings.model.base_url = fake.url
    app.settings.model.max_retries = 0
    return fake


def tool_results(request):
    return [m["content"] for m in request["body"]["messages"] if m["role"] == "tool"]


async def test_discussion_turn_writes_a_plan_file(ws, app, model, runtime):
    md = "# Cache\n\n- [ ] add cache in `src/cache.py`\n- [ ] wire it in `src/app.py`\n"
    model.push(
        {"tool_calls": [{"name": "write", "arguments": {"path": "docs/plan.md", "content": md}}]}
    )
    model.push(
        {"tool_calls": [{"name": "write", "arguments": {"path": "src/cache.py", "content": "x"}}]}
    )
    model.push({"text": "planned"})
    summary = await runtime.run(TurnRequest(prompt="plan a cache", mode="discussion"), BaseHost())
    assert summary.status == "done", summary
    results = [r for req in model.chat_requests() for r in tool_results(req)]
    assert any("also committed as plan cache with 2 tasks" in r for r in results)
    assert any("design artifacts" in r for r in results)
    assert not (ws / "src/cache.py").exists()
    store = await app.store()
    assert [e.path for e in await store.turn_edits(summary.turn_id)] == ["docs/plan.md"]
    assert summary.modified == ["docs/plan.md"]
    session = await store.get_session(summary.session)
    assert session.committed_plan_id == (await store.get_plan("cache")).id


async def test_autopilot_turn_patches_and_reads(ws, app, model, runtime):
    (ws / "a.py").write_text("A = 1\n")
    patch = "--- a/a.py\n+++ b/a.py\n@@ -1 +1,2 @@\n A = 1\n+B = 2\n"
    model.push({"tool_calls": [{"name": "apply_patch", "arguments": {"patch": patch}}]})
    model.push({"tool_calls": [{"name": "read", "arguments": {"path": "a.py"}}]})
    model.push(
        {
            "tool_calls": [
                {
                    "name": "commit_plan",
                    "arguments": {"title": "x", "steps": [{"description": "y"}]},
                }
            ]
        }
    )
    model.push({"text": "ok"})
    summary = await runtime.run(TurnRequest(prompt="add B", mode="autopilot"), BaseHost())
    assert summary.status == "done"
    results = [r for req in model.chat_requests() for r in tool_results(req)]
    assert any("patched a.py (1 hunks)" in r for r in results)
    assert any("2  B = 2" in r for r in results)
    assert any("not available in autopilot mode" in r for r in results)
    assert (ws / "a.py").read_text() == "A = 1\nB = 2\n"
    assert summary.modified == ["a.py"]
