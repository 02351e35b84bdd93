"""Start-up stays light: the runtime's features load off the event loop, the tools' heavy
libraries on first use."""

from __future__ import annotations

import subprocess
import sys

from ndomo import compose


def _fresh(code: str) -> str:
    """What `code` prints in a fresh interpreter (nothing imported by this test process)."""
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout


def test_the_server_offers_every_lsp_action_and_leaves_the_features_unloaded():
    """The commands come from the declared actions (no table to keep up to date); the
    runtime's features (tool modules, the model client) load later, in threads."""
    code = (
        "import sys; from ndomo import compose; from ndomo.lsp import warmup;"
        "from ndomo.lsp.features import create_server;"
        "warmup.install(compose.server_loads()); s = create_server();"
        "heavy = [m for m in ('ndomo.tools.shell', 'ndomo.tools.files', 'ndomo.agents.feature',"
        " 'ndomo.llm.openai_client', 'httpx', 'bashlex', 'bs4') if m in sys.modules]; print(','.join(heavy));"
        "print(' '.join(sorted(c for c in s.protocol.fm.commands if c.startswith('ndomo.'))))"
    )
    out = _fresh(code).split("\n")
    assert out[0] == ""
    declared = sorted(a.command for a in compose.actions().all("lsp"))
    assert out[1].split() == declared
    assert "ndomo.memory.list" in declared and "ndomo.session.list" in declared


def test_warmup_imports_what_commands_need():
    code = (
        "import sys; from ndomo import compose; from ndomo.lsp import warmup;"
        "warmup.install(compose.server_loads()); warmup.core();"
        "print('ndomo.runtime.runtime' in sys.modules, 'ndomo.store.store' in sys.modules)"
    )
    assert _fresh(code).strip() == "True True"
    modules = compose.every_module()
    assert "ndomo.__main__" not in modules and "ndomo.tools.shell.bash" in modules


def test_the_servers_warm_up_leaves_the_acp_front_end_alone():
    """`ndomo serve` warms ndomo's modules in a thread while the first turns run; ACP's SDK
    schema (~0.5 s here) is no part of a language server's work (the package's own
    `__init__` is read by the walk that finds the modules)."""
    code = (
        "import sys; from ndomo import compose; from ndomo.lsp import warmup;"
        "warmup.install(compose.server_loads()); warmup.core(); warmup.extras();"
        "print('ndomo.tools.shell.bash' in sys.modules, 'ndomo.lsp.agent_diagnostics' in sys.modules,"
        " any(m == 'acp' or m.startswith(('acp.', 'ndomo.acp.')) for m in sys.modules))"
    )
    assert _fresh(code).split() == ["True", "True", "False"]


async def test_acp_builds_the_runtime_plugins_off_the_event_loop(tmp_path):
    """`ndomo acp` builds its registries at the first session's folder: not on the loop
    that reads the client's messages (a `session/cancel` meanwhile is read at once)."""
    import threading

    from ndomo.acp.agent import NdomoAgent

    built_on = []

    def plugins():
        built_on.append(threading.current_thread() is threading.main_thread())
        return compose.plugins()

    agent = NdomoAgent(plugins)
    try:
        ws = await agent._workspace(str(tmp_path))
        assert ws.runtime.plugins.tools.names()  # the registries it built
    finally:
        await agent.aclose()
    assert built_on == [False]


async def test_start_builds_the_runtime_plugins_off_the_event_loop(tmp_path, monkeypatch):
    """Building the plugins imports every tool module (seconds on a busy machine): never on the loop."""
    import threading

    from ndomo.lsp import warmup
    from ndomo.lsp.lifecycle import LifecycleFeature
    from ndomo.runtime.runtime import Runtime

    monkeypatch.setattr(warmup, "_loads", compose.server_loads())
    built_on = []
    real = warmup.plugins

    def recording():
        built_on.append(threading.current_thread() is threading.main_thread())
        return real()

    monkeypatch.setattr(warmup, "plugins", recording)

    class _Server:
        closing = False
        init_options = None
        plugins = None  # built for the initialize result when there was one
        features: list = []

        def __init__(self):
            import asyncio

            self._fut = asyncio.get_running_loop().create_future()
            self.apps: dict = {}
            self.client_settings: dict = {}

        def ready_future(self):
            return self._fut

        def workspace_roots(self):
            return [tmp_path]

        def spawn(self, coro):
            coro.close()

    server = _Server()
    feat = LifecycleFeature(server)
    await feat.start()
    (app,) = server.apps.values()
    try:
        assert built_on == [False]
        assert isinstance(app.existing(Runtime), Runtime)
        assert Runtime.of(app).plugins.modes  # the one built in the thread
    finally:
        await app.aclose()


def test_building_the_tool_registry_does_not_import_bashlex():
    """bashlex builds parser tables at import (0.3–0.8 s): only the first shell check pays."""
    code = (
        "import sys; from ndomo import compose; compose.plugins();print('bashlex' in sys.modules)"
    )
    out = _fresh(code)
    assert out.strip() == "False"


def test_building_the_tool_registry_leaves_page_libraries_unimported():
    """bs4 (with soupsieve) and httpx were ~60% of building the plugins at start-up, which the
    first useful answer waits for; they load when a page is first fetched or read."""
    code = (
        "import sys; from ndomo import compose; p = compose.plugins();"
        "print('web_fetch' in p.tools.names(), 'check_page' in p.tools.names());"
        "print(','.join(m for m in ('bs4', 'soupsieve', 'httpx') if m in sys.modules))"
    )
    out = _fresh(code).split("\n")
    assert out[0] == "True True" and out[1] == ""
