"""The foundation seen from an editor: initialize, health, commands, bad arguments, bad config."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams
from pygls.uris import from_fs_path

from tests.e2e.conftest import command
from tests.e2e.editor_support import wait_for
from tests.trusting import trust


async def test_initialize_advertises_commands_code_actions_and_incremental_sync(lsp, tmp_path):
    client = await lsp.start(tmp_path)
    caps = client.init_result.capabilities
    assert caps.code_action_provider
    sync = caps.text_document_sync
    assert sync.change == types.TextDocumentSyncKind.Incremental
    result = await command(client, "ndomo.commands")
    names = {c["command"] for c in result}
    assert set(caps.execute_command_provider.commands) == names
    from ndomo import compose

    assert names == {a.command for a in compose.actions().all("lsp")}


async def test_health_returns_structured_report(lsp, tmp_path):
    client = await lsp.start(tmp_path)
    report = await command(client, "ndomo.health", {})
    assert report["version"]
    assert report["workspace"] == str(tmp_path.resolve())
    assert report["config"] == {"ok": True, "problems": []}
    assert report["database"]["ok"] is True
    assert report["database"]["path"].endswith(".ndomo/ndomo.db")
    assert report["model"]["url"] == "http://127.0.0.1:9/v1"
    assert report["model"]["ok"] is False and "127.0.0.1:9" in report["model"]["detail"]
    assert report["agents"]["loaded"] >= 16
    assert "craftsman" in report["agents"]["names"]


async def test_wrong_argument_type_names_the_field_and_server_keeps_serving(lsp, tmp_path):
    client = await lsp.start(tmp_path)
    with pytest.raises(JsonRpcInvalidParams) as err:
        await command(client, "ndomo.health", {"probe_model": "sometimes"})
    assert "probe_model" in str(err.value)
    with pytest.raises(JsonRpcInvalidParams) as err:
        await command(client, "ndomo.health", {"no_such_field": 1})
    assert "no_such_field" in str(err.value)
    report = await command(client, "ndomo.health", {"probe_model": False})
    assert report["model"]["ok"] is None


async def test_bad_config_starts_reports_once_and_marks_each_bad_line(lsp, tmp_path):
    cfg = tmp_path / ".ndomo" / "config.yaml"
    cfg.parent.mkdir()
    cfg.write_text(
        "model:\n"
        "  name: my-model\n"
        "  timeout_s: soon\n"  # line 2: wrong type
        "colour: blue\n"  # line 3: unknown key
        "modes:\n"
        "  default: autopilot\n",
        encoding="utf-8",
    )
    trust(tmp_path)  # an untrusted folder's file is not read at all
    client = await lsp.start(tmp_path)
    # the server keeps serving and uses the good keys
    report = await command(client, "ndomo.health", {"probe_model": False})
    assert report["model"]["name"] == "my-model"
    keys = {p["key"] for p in report["config"]["problems"]}
    assert keys == {"model.timeout_s", "colour"}
    errors = [m for m in client.messages if m.type == types.MessageType.Error]
    assert len(errors) == 1 and "config.yaml" in errors[0].message
    uri = from_fs_path(str(cfg))
    await wait_for(lambda: uri in client.diagnostics, what="config diagnostics")
    lines = sorted(d.range.start.line for d in client.diagnostics[uri])
    assert lines == [2, 3]


async def test_cli_health_json_is_the_lsp_report(lsp, tmp_path):
    client = await lsp.start(tmp_path)
    over_lsp = await command(client, "ndomo.health", {})
    env = {
        "PATH": "/usr/bin:/bin",
        "NDOMO_BASE_URL": "http://127.0.0.1:9/v1",
        # the same user: the same trust record and user store as the server's
        "XDG_DATA_HOME": os.environ["XDG_DATA_HOME"],
        "XDG_CONFIG_HOME": os.environ["XDG_CONFIG_HOME"],
    }
    out = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "ndomo", "health", "--json", "--workspace", str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert out.returncode == 1, out.stderr  # the model does not answer
    assert json.loads(out.stdout) == over_lsp
