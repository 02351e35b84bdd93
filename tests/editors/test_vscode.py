"""The VS Code extension builds, type-checks, passes its node tests and packages a .vsix.

Runs on a fresh copy (no node_modules) so `npm ci` from the committed lockfile is what
is checked, as on CI.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.editors.vscode_harness import extension_copy, npm_run as _run

EXT = Path(__file__).resolve().parents[2] / "editors" / "vscode"
NPM = shutil.which("npm")
NPX = shutil.which("npx")


needs_npm = pytest.mark.skipif(NPM is None or NPX is None, reason="npm/npx not installed: the VS Code extension cannot be built")


def _server_commands() -> list[str]:
    out = subprocess.run(
        [sys.executable, "-m", "ndomo", "commands", "--json"], capture_output=True, text=True, timeout=120, check=True
    ).stdout
    return sorted(a["command"] for a in json.loads(out))


def test_no_palette_command_is_a_server_command() -> None:
    """vscode-languageclient registers every command the server advertises; an extension
    command with the same id makes the client fail to start ("command already exists")."""
    server = _server_commands()
    pkg = json.loads((EXT / "package.json").read_text())
    palette = {c["command"] for c in pkg["contributes"]["commands"]}
    assert palette, "package.json contributes no commands"
    assert not palette & set(server), f"palette ids that the server also advertises: {sorted(palette & set(server))}"
    # the stub language client registers exactly what the server advertises
    stubbed = json.loads((EXT / "test" / "server-commands.json").read_text())["commands"]
    assert stubbed == server, "editors/vscode/test/server-commands.json is out of date: regenerate it from `ndomo commands --json`"


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """A fresh copy with `npm ci` (shared with the real-VS-Code tests, which package it)."""
    return extension_copy(tmp_path_factory.getbasetemp())


@needs_npm
def test_typecheck(built: Path) -> None:
    _run([NPM, "run", "typecheck"], built)


@needs_npm
def test_node_unit_tests(built: Path) -> None:
    out = _run([NPM, "test"], built)
    assert "# fail 0" in out
    assert "# pass 0" not in out


@needs_npm
def test_build_and_package(built: Path) -> None:
    _run([NPM, "run", "build"], built)
    assert (built / "dist" / "extension.js").stat().st_size > 0
    _run([NPM, "run", "package"], built)
    vsix = list(built.glob("*.vsix"))
    assert len(vsix) == 1
    with zipfile.ZipFile(vsix[0]) as z:
        names = set(z.namelist())
    assert "extension/dist/extension.js" in names
    assert {"extension/dist/chat.js", "extension/media/ndomo.svg"} <= names  # the conversation view
    assert "extension/package.json" in names
    assert not any(n.startswith("extension/src/") or n.startswith("extension/node_modules/") for n in names)
