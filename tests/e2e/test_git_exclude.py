"""`.ndomo/` in a git repository, as a user sees it: after `ndomo run`, `git status` is clean —
ndomo adds `/.ndomo/` to the repository's `.git/info/exclude` (a worktree's: the common
dir's) once, never to the user's `.gitignore`, and not when git ignores it already or the
folder holds something to commit (project agents, config)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import server_env
from tests.fakes.fake_model import FakeModel
from tests.trusting import trust

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def git(cwd: Path, *args: str) -> str:
    out = subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=60, check=True
    )
    return out.stdout


def repo(path: Path) -> Path:
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    (path / "calc.py").write_text("x = 1\n", encoding="utf-8")
    git(path, "add", "calc.py")
    git(path, "-c", "user.name=u", "-c", "user.email=u@example.com", "commit", "-qm", "first")
    return path


def run(ws: Path, fake: FakeModel) -> None:
    trust(ws)
    out = subprocess.run(
        [sys.executable, "-m", "ndomo", "run", "--workspace", str(ws), "hello"],
        capture_output=True,
        text=True,
        timeout=120,
        env=server_env({"NDOMO_BASE_URL": fake.url}),
        stdin=subprocess.DEVNULL,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert (ws / ".ndomo" / ".gitignore").exists()  # ndomo's state is there


def test_a_new_ndomo_folder_is_excluded_once_and_git_status_stays_clean(tmp_path):
    ws = repo(tmp_path / "repo")
    with FakeModel(default_text="hi") as fake:
        run(ws, fake)
        assert git(ws, "status", "--porcelain", "--untracked-files=all") == ""
        exclude = (ws / ".git" / "info" / "exclude").read_text(encoding="utf-8")
        assert exclude.splitlines().count("/.ndomo/") == 1, exclude
        assert not (ws / ".gitignore").exists()  # the user's file is never written
        shutil.rmtree(ws / ".ndomo")  # created again: still one line
        run(ws, fake)
    assert (ws / ".git" / "info" / "exclude").read_text(encoding="utf-8") == exclude
    assert git(ws, "status", "--porcelain", "--untracked-files=all") == ""


def test_a_worktrees_ndomo_folder_is_excluded_in_the_common_git_dir(tmp_path):
    main = repo(tmp_path / "main")
    wt = tmp_path / "wt"
    git(main, "worktree", "add", "-q", "-b", "side", str(wt))
    with FakeModel(default_text="hi") as fake:
        run(wt, fake)
    assert (wt / ".git").is_file()
    assert (
        "/.ndomo/" in (main / ".git" / "info" / "exclude").read_text(encoding="utf-8").splitlines()
    )
    assert git(wt, "status", "--porcelain", "--untracked-files=all") == ""


def test_nothing_is_added_when_git_ignores_it_already_or_it_holds_a_projects_config(tmp_path):
    ignored = repo(tmp_path / "ignored")
    (ignored / ".gitignore").write_text(".ndomo/\n", encoding="utf-8")
    exclude = ignored / ".git" / "info" / "exclude"
    before = exclude.read_text(encoding="utf-8") if exclude.exists() else None
    shared = repo(tmp_path / "shared")
    (shared / ".ndomo").mkdir()
    (shared / ".ndomo" / "config.yaml").write_text("model:\n  name: m\n", encoding="utf-8")
    with FakeModel(default_text="hi") as fake:
        run(ignored, fake)
        run(shared, fake)
    assert (exclude.read_text(encoding="utf-8") if exclude.exists() else None) == before
    assert (ignored / ".gitignore").read_text(encoding="utf-8") == ".ndomo/\n"
    assert "/.ndomo/" not in (shared / ".git" / "info" / "exclude").read_text(encoding="utf-8")
    # the project's config stays visible to git, to be committed
    assert ".ndomo/config.yaml" in git(shared, "status", "--porcelain", "--untracked-files=all")
