from __future__ import annotations

import pytest

from ndomo import plan
from ndomo.app import App
from ndomo.features import builtin
from ndomo.modes import autopilot, brainstorming, discussion
from ndomo.runtime.context import TurnContext, TurnRequest
from ndomo.runtime.host import BaseHost
from ndomo.runtime.plugins import build_plugins
from ndomo.runtime.runtime import Runtime
from ndomo.tools import code, files

# Only the features these tools need, so another feature's permission policy cannot change the outcome.
FEATURES = [
    builtin.setup,
    discussion.setup,
    brainstorming.setup,
    autopilot.setup,
    files.setup,
    code.setup,
    plan.setup,
]


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
async def app(ws):
    a = App(ws)
    yield a
    await a.aclose()


@pytest.fixture
def plugins():
    return build_plugins(FEATURES)


@pytest.fixture
def runtime(app, plugins):
    return Runtime(app, plugins)


@pytest.fixture
def make_ctx(app, plugins, runtime):
    """A turn context as the runtime builds one, with a recorded turn so edits are stored."""

    async def make(
        mode: str = "autopilot", agent: str = "craftsman", host=None, *, turn: bool = True
    ) -> TurnContext:
        state = await runtime.session()
        state.mode = mode
        ctx = TurnContext(
            app=app,
            runtime=runtime,
            host=host or BaseHost(),
            request=TurnRequest(prompt="test", mode=mode),
            session=state,
            mode=mode,
            agent_name=agent,
        )
        if turn:
            store = await app.store()
            ctx.turn_id = (
                await store.start_turn(session_id=state.id, agent=agent, mode=mode, prompt="test")
            ).id
        ctx.tools = plugins.tools.filter(ctx)
        return ctx

    return make


@pytest.fixture
def call(plugins):
    async def run(ctx, name, args):
        return await plugins.tools.execute(ctx, name, args)

    return run
