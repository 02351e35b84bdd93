"""The design's whole fence table (design §2), against the real registry of every feature."""

from __future__ import annotations

import pytest

from ndomo import compose
from ndomo.runtime.context import SessionState, TurnContext, TurnRequest
from ndomo.runtime.host import BaseHost
from ndomo.runtime.runtime import Runtime
from ndomo.runtime.tools import AllowAll

MODES = ("discussion", "brainstorming", "autopilot")
EVERY = set(MODES)
TABLE = {
    **{t: EVERY for t in ("read", "grep", "glob")},
    **{t: EVERY for t in ("file_map", "find_symbol", "find_references", "outline_file")},
    **{t: EVERY for t in ("check_page", "ask_user", "remember", "recall")},
    **{t: EVERY for t in ("edit", "write", "apply_patch")},  # discussion: design artifacts only
    "commit_plan": {"discussion"},
    "web_fetch": {"brainstorming"},
    "bash": {"autopilot"},
    "serve": {"autopilot"},
    "handback": EVERY,
}


@pytest.fixture
def rt(app):
    plugins = compose.plugins()
    plugins.tools.policy = AllowAll()  # the fence alone, not the agents' permissions
    return Runtime(app, plugins)


def context(rt, mode):
    return TurnContext(
        app=rt.app,
        runtime=rt,
        host=BaseHost(),
        request=TurnRequest(prompt="t"),
        session=SessionState(id="s", mode=mode, agent="craftsman"),
        mode=mode,
        agent_name="craftsman",
    )


@pytest.mark.parametrize("mode", MODES)
def test_offered_tools_follow_the_table(rt, mode):
    offered = {t.name for t in rt.plugins.tools.filter(context(rt, mode))}
    for name, modes in TABLE.items():
        assert (name in offered) == (mode in modes), (name, mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(n for n, m in TABLE.items() if m != EVERY))
async def test_fenced_tools_are_refused_when_named_anyway(rt, mode, name):
    if mode in TABLE[name]:
        return
    result = await rt.plugins.tools.execute(context(rt, mode), name, {})
    assert result.status == "refused"
    assert result.content.startswith(f"tool '{name}' is not available in {mode} mode; switch to ")


async def test_discussion_writes_design_artifacts_only(rt, tmp_path):
    ctx = context(rt, "discussion")
    ok = await rt.plugins.tools.execute(
        ctx, "write", {"path": "docs/design.md", "content": "# d\n"}
    )
    assert ok.ok, ok.content
    refused = await rt.plugins.tools.execute(
        ctx, "write", {"path": "src/app.py", "content": "x = 1\n"}
    )
    assert refused.status == "refused" and "design artifacts" in refused.content
    assert not (tmp_path / "src" / "app.py").exists()
