"""The root rule (`ndomo.app`) and what `.ndomo/.gitignore` keeps out of git — checked
with real git — and the CLI following the same rule from the current folder."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from ndomo.app import App, find_root, given_root
from ndomo.compose import main


@pytest.fixture
def home(tmp_path, monkeypatch):
    h = tmp_path / "home"
    h.mkdir()
    monkeypatch.setenv("HOME", str(h))
    return h


def test_given_folder_is_the_root_except_home_and_slash(home, tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    assert given_root(plain) == plain.resolve()
    assert given_root(home) is None
    assert given_root(Path("/")) is None


@pytest.mark.parametrize(
    "marker", [".git", "pyproject.toml", "package.json", "go.mod", "Cargo.toml", ".ndomo"]
)
def test_markers_found_upward_but_never_home(home, marker):
    proj = home / "p"
    deep = proj / "a" / "b"
    deep.mkdir(parents=True)
    assert find_root(deep) is None
    target = proj / marker
    target.mkdir() if marker.startswith(".") else target.write_text("", encoding="utf-8")
    assert find_root(deep) == proj.resolve()
    (home / marker).mkdir() if marker.startswith(".") else (home / marker).write_text(
        "", encoding="utf-8"
    )
    assert find_root(home) is None  # $HOME's own markers never make it a root


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
async def test_state_gitignore_keeps_the_database_out_and_agents_config_in(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    app = App(tmp_path)
    await (await app.store()).ping()
    await app.aclose()
    # a new .ndomo/ is excluded in git at first (git status stays clean); a project that
    # commits its agents removes that line, as docs/configuration.md says: then the
    # .gitignore below decides
    exclude = tmp_path / ".git" / "info" / "exclude"
    assert "/.ndomo/" in exclude.read_text(encoding="utf-8").splitlines()
    exclude.write_text("", encoding="utf-8")
    state = tmp_path / ".ndomo"
    (state / "agents").mkdir()
    for rel in [
        "agents/helper.md",
        "config.yaml",
        "instructions.md",
        "sessions/s.md",
        "plans/p.md",
        "archives/plans/p-2026.md",
        "artifacts/a.txt",
    ]:
        (state / rel).parent.mkdir(parents=True, exist_ok=True)
        (state / rel).write_text("x\n", encoding="utf-8")
    out = subprocess.run(
        ["git", "-C", str(tmp_path), "status", "--porcelain", "--untracked-files=all"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    tracked = sorted(line[3:] for line in out.splitlines())
    assert tracked == [
        ".ndomo/.gitignore",
        ".ndomo/agents/helper.md",
        ".ndomo/config.yaml",
        ".ndomo/instructions.md",
    ]


def test_cli_health_creates_nothing_where_there_is_no_root(home, monkeypatch, capsys):
    monkeypatch.chdir(home)
    monkeypatch.setenv("NDOMO_BASE_URL", "http://127.0.0.1:9/v1")
    rc = main(["health"])
    out = capsys.readouterr()
    assert rc == 1 and "no workspace" in out.out
    assert not (home / ".ndomo").exists()
    rc = main(["plan", "list"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "no workspace" in err and "git init" in err
    assert not (home / ".ndomo").exists()
