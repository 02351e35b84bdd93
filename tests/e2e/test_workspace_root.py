"""Where `.ndomo/` lives, seen from an editor: the folder it sends is the root (markers or
not), except $HOME and /; with no folder, a marker upward from the server's folder; none
found, no store — and a command that needs one says why."""

from __future__ import annotations

import pytest
from pygls.exceptions import JsonRpcException

from tests.e2e.conftest import command


def _home(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    return home


async def test_a_folder_without_markers_is_the_root(lsp, tmp_path):
    client = await lsp.start(tmp_path, env={"HOME": str(_home(tmp_path))})
    assert (await command(client, "ndomo.plan.list", {})) == []
    assert (tmp_path / ".ndomo" / "ndomo.db").exists()
    from ndomo.app import STATE_GITIGNORE

    assert (tmp_path / ".ndomo" / ".gitignore").read_text(encoding="utf-8") == STATE_GITIGNORE


async def test_home_sent_as_the_folder_gets_no_store(lsp, tmp_path):
    home = _home(tmp_path)
    (home / ".git").mkdir()  # even with a marker
    client = await lsp.start(home, env={"HOME": str(home)})
    with pytest.raises(JsonRpcException) as err:
        await command(client, "ndomo.plan.list", {})
    assert "no workspace" in str(err.value)
    assert not (home / ".ndomo").exists()
    assert any("no workspace" in m.message for m in client.messages)
    report = await command(client, "ndomo.health", {"probe_model": False})
    assert report["database"]["ok"] is False and "no workspace" in report["database"]["detail"]
    assert not (home / ".ndomo").exists()


async def test_single_file_mode_finds_the_project_by_its_marker(lsp, tmp_path):
    home = _home(tmp_path)
    project = home / "proj"
    (project / "src" / "deep").mkdir(parents=True)
    (project / "go.mod").write_text("module x\n", encoding="utf-8")
    client = await lsp.start(
        project, env={"HOME": str(home)}, send_root=False, cwd=project / "src" / "deep"
    )
    report = await command(client, "ndomo.health", {"probe_model": False})
    assert report["workspace"] == str(project.resolve())
    assert (project / ".ndomo").is_dir() and not (project / "src" / ".ndomo").exists()


async def test_single_file_mode_without_a_marker_runs_without_a_store(lsp, tmp_path):
    home = _home(tmp_path)
    (home / ".bashrc").write_text("export X=1\n", encoding="utf-8")
    client = await lsp.start(home, env={"HOME": str(home)}, send_root=False, cwd=home)
    with pytest.raises(JsonRpcException) as err:
        await command(client, "ndomo.turn", {"prompt": "hi"})
    assert "no workspace" in str(err.value)
    assert not (home / ".ndomo").exists()
