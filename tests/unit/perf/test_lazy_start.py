"""Start-up stays light: the command list is known without importing the actions."""

from __future__ import annotations

import subprocess
import sys

from ndomo.actions import load_actions
from ndomo.lsp.command_names import LSP_ACTION_NAMES, READ_ONLY_ACTIONS


def _fresh(code: str) -> str:
    """What `code` prints in a fresh interpreter (nothing imported by this test process)."""
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout


def test_manifest_lists_every_lsp_action():
    declared = sorted(a.name for a in load_actions().all("lsp"))
    assert sorted(LSP_ACTION_NAMES) == declared, "update ndomo/lsp/command_names.py"
    assert set(LSP_ACTION_NAMES) >= READ_ONLY_ACTIONS


def test_server_creation_does_not_import_the_app_or_actions():
    code = (
        "import sys; from ndomo.lsp.features import create_server; s = create_server();"
        "heavy = [m for m in ('ndomo.app', 'ndomo.actions', 'ndomo.runtime.runtime', 'pydantic', 'yaml', 'openai')"
        " if m in sys.modules]; print(','.join(heavy));"
        "print(len([c for c in s.protocol.fm.commands if c.startswith('ndomo.')]))"
    )
    out = _fresh(code).split("\n")
    assert out[0] == ""
    assert int(out[1]) == len(LSP_ACTION_NAMES)


def test_warmup_imports_what_commands_need():
    from ndomo.lsp import warmup

    code = "import sys; from ndomo.lsp import warmup; warmup.core(); print('ndomo.runtime.runtime' in sys.modules)"
    out = _fresh(code)
    assert out.strip() == "True"
    assert "ndomo.__main__" not in warmup._ndomo_modules()


async def test_start_builds_the_runtime_plugins_off_the_event_loop(tmp_path, monkeypatch):
    """`build_plugins` imports every tool module (seconds on a busy machine): never on the loop."""
    import threading

    from ndomo.lsp import warmup
    from ndomo.lsp.lifecycle import LifecycleFeature
    from ndomo.runtime.runtime import Runtime

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
        "import sys; from ndomo.runtime.plugins import build_plugins; build_plugins();"
        "print('bashlex' in sys.modules)"
    )
    out = _fresh(code)
    assert out.strip() == "False"


def test_building_the_tool_registry_leaves_page_libraries_unimported():
    """bs4 (with soupsieve) and httpx were ~60% of building the plugins at start-up, which the
    first useful answer waits for; they load when a page is first fetched or read."""
    code = (
        "import sys; from ndomo.runtime.plugins import build_plugins; p = build_plugins();"
        "print('web_fetch' in p.tools.names(), 'check_page' in p.tools.names());"
        "print(','.join(m for m in ('bs4', 'soupsieve', 'httpx') if m in sys.modules))"
    )
    out = _fresh(code).split("\n")
    assert out[0] == "True True" and out[1] == ""
