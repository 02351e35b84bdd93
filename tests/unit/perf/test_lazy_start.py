"""Start-up stays light: the command list is known without importing the actions."""

from __future__ import annotations

import subprocess
import sys

from ndomo.actions import load_actions
from ndomo.lsp.command_names import LSP_ACTION_NAMES, READ_ONLY_ACTIONS


def test_manifest_lists_every_lsp_action():
    declared = sorted(a.name for a in load_actions().all("lsp"))
    assert sorted(LSP_ACTION_NAMES) == declared, "update ndomo/lsp/command_names.py"
    assert READ_ONLY_ACTIONS <= set(LSP_ACTION_NAMES)


def test_server_creation_does_not_import_the_app_or_actions():
    code = (
        "import sys; from ndomo.lsp.server import create_server; s = create_server();"
        "heavy = [m for m in ('ndomo.app', 'ndomo.actions', 'ndomo.runtime.runtime', 'pydantic', 'yaml', 'openai')"
        " if m in sys.modules]; print(','.join(heavy));"
        "print(len([c for c in s.protocol.fm.commands if c.startswith('ndomo.')]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[0] == ""
    assert int(out[1]) == len(LSP_ACTION_NAMES)


def test_warmup_imports_what_commands_need():
    from ndomo.lsp import warmup

    code = "import sys; from ndomo.lsp import warmup; warmup.core(); print('ndomo.runtime.runtime' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "True"
    assert "ndomo.__main__" not in warmup._ndomo_modules()
