"""Checkpoints and rewind, as a user gets them: `ndomo run` with the scripted model, its
`bash` in the real sandbox, then `ndomo session rewind`; the user's own git untouched."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.e2e.conftest import server_env
from tests.fakes.fake_model import FakeModel

pytestmark = pytest.mark.skipif(
    shutil.which("bwrap") is None or shutil.which("git") is None,
    reason="needs bubblewrap and git",
)


def ndomo(ws: Path, *args: str, fake: FakeModel | None = None, ok: bool = True):
    env = server_env({"NDOMO_BASE_URL": fake.url} if fake else None)
    out = subprocess.run(
        [sys.executable, "-m", "ndomo", *args, "--workspace", str(ws)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    if ok:
        assert out.returncode == 0, out.stdout + out.stderr
    return out


def bash_turn(ws: Path, fake: FakeModel, command: str, prompt: str) -> dict:
    fake.push({"tool_calls": [{"name": "bash", "arguments": {"command": command}}]})
    fake.push({"text": "done"})
    out = ndomo(
        ws,
        "run",
        "--json",
        "--mode",
        "autopilot",
        "--agent",
        "craftsman",
        "--yes",
        prompt,
        fake=fake,
    )
    text = out.stdout
    summary = json.loads(text[text.index("\n{") + 1 :] if not text.startswith("{") else text)
    assert summary["status"] == "done", summary
    return summary


def rewind(ws: Path, *args: str, ok: bool = True):
    return ndomo(ws, "session", "rewind", "--json", *args, ok=ok)


def git(ws: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=ws, capture_output=True, text=True, check=True).stdout


def git_state(ws: Path) -> dict:
    """What the user's repository is: HEAD, refs, the index file, config, status."""
    dot = ws / ".git"
    return {
        "head": git(ws, "rev-parse", "HEAD"),
        "refs": git(ws, "for-each-ref"),
        "index": hashlib.sha256((dot / "index").read_bytes()).hexdigest(),
        "config": (dot / "config").read_text(),
        "objects": sorted(str(p.relative_to(dot)) for p in (dot / "objects").rglob("*")),
    }


def tree(ws: Path) -> dict[str, str]:
    """Every file outside .git and .ndomo, with its text."""
    out = {}
    for path in ws.rglob("*"):
        rel = path.relative_to(ws).as_posix()
        if rel.split("/")[0] in (".git", ".ndomo") or not path.is_file():
            continue
        out[rel] = path.read_text()
    return out


@pytest.fixture
def ws(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    git(ws, "init", "-q")
    git(ws, "config", "user.email", "u@example.com")
    git(ws, "config", "user.name", "u")
    (ws / ".gitignore").write_text("*.log\n")
    (ws / "tracked.txt").write_text("tracked v1\n")
    (ws / "keep.txt").write_text("keep v1\n")
    (ws / "lib").mkdir()
    (ws / "lib" / "mod.py").write_text("x = 1\n")
    git(ws, "add", "-A")
    git(ws, "commit", "-qm", "init")
    (ws / "untracked.txt").write_text("untracked v1\n")  # never added to the user's git
    (ws / "notes.txt").write_text("my notes\n")
    (ws / "build.log").write_text("ignored v1\n")  # ignored by .gitignore
    git(ws, "add", "notes.txt")  # staged, not committed: the index is the user's too
    return ws


@pytest.fixture
def fake():
    with FakeModel(default_text="ok") as fm:
        yield fm


MESS = (
    "rm tracked.txt untracked.txt lib/mod.py && echo rewritten > keep.txt"
    " && mkdir -p made/deep && echo new > made/deep/new.txt && echo fresh > fresh.txt"
    " && echo ignored v2 > build.log"
)


def test_a_turns_shell_effects_are_rewound_exactly_and_the_users_git_is_untouched(ws, fake):
    before_files = tree(ws)
    before_git = git_state(ws)
    first = bash_turn(ws, fake, MESS, "clean up")
    assert not (ws / "tracked.txt").exists() and (ws / "fresh.txt").exists()  # it ran
    # the shadow repository is in the user's data, not in the workspace
    assert not any(p.name == "checkpoints" for p in ws.rglob("*"))
    data = Path(os.environ["XDG_DATA_HOME"]) / "ndomo" / "checkpoints"
    assert any(data.iterdir())

    out = rewind(ws, "--prompt", "1", "--what", "code")
    result = json.loads(out.stdout)
    assert result["turn_id"] == first["turn_id"]
    after = tree(ws)
    # tracked and untracked files deleted by the command are back, what it made is gone;
    # an ignored file is not in a checkpoint: it stays as the command left it
    expected = dict(before_files, **{"build.log": "ignored v2\n"})
    assert after == expected
    assert not (ws / "made").exists()
    assert sorted(result["restored"]) == sorted(
        ["tracked.txt", "untracked.txt", "lib/mod.py", "keep.txt", "made/deep/new.txt", "fresh.txt"]
    )
    assert git_state(ws) == before_git
    # the ids are recorded: the turn's start and end, and one before its command
    db = sqlite3.connect(ws / ".ndomo" / "ndomo.db")
    try:
        rows = db.execute(
            "SELECT kind, note FROM checkpoints WHERE turn_id = ? ORDER BY id", (first["turn_id"],)
        ).fetchall()
    finally:
        db.close()
    assert rows == [("turn_start", None), ("command", MESS), ("turn_end", None)]
    # (.ndomo/, ndomo's own folder made by the first run, is in .git/info/exclude)
    assert git(ws, "status", "--porcelain") == "A  notes.txt\n?? untracked.txt\n"


def test_the_sandbox_neither_reads_nor_writes_the_checkpoints(ws, fake):
    data = Path(os.environ["XDG_DATA_HOME"]) / "ndomo" / "checkpoints"
    probe = (
        f"ls -R {data} > seen.txt 2>&1; echo planted > {data}/planted 2>> seen.txt;"
        f" find {data} -name HEAD >> seen.txt 2>&1; true"
    )
    bash_turn(ws, fake, probe, "look around")
    assert data.is_dir() and any(data.iterdir())  # the turn's checkpoint exists
    seen = (ws / "seen.txt").read_text()
    assert "HEAD" not in seen and "objects" not in seen
    assert not (data / "planted").exists()


def test_a_user_edit_after_the_turn_is_named_and_not_overwritten_without_force(ws, fake):
    bash_turn(ws, fake, "echo agent > keep.txt && echo agent > tracked.txt", "edit")
    (ws / "keep.txt").write_text("the user's own edit\n")  # after the turn
    (ws / "untracked.txt").write_text("the user's untouched-by-agent edit\n")

    refused = rewind(ws, "--prompt", "1", "--what", "code", ok=False)
    assert refused.returncode != 0
    assert "keep.txt" in refused.stdout + refused.stderr
    assert "tracked.txt" not in (refused.stdout + refused.stderr).replace("untracked.txt", "")
    assert (ws / "keep.txt").read_text() == "the user's own edit\n"  # nothing written
    assert (ws / "tracked.txt").read_text() == "agent\n"

    # `ndomo rewind` is `ndomo session rewind`
    forced = json.loads(
        ndomo(ws, "rewind", "--json", "--prompt", "1", "--what", "code", "--force").stdout
    )
    assert sorted(forced["restored"]) == ["keep.txt", "tracked.txt"]
    assert (ws / "keep.txt").read_text() == "keep v1\n"
    assert (ws / "tracked.txt").read_text() == "tracked v1\n"
    # a file only the user changed is left alone
    assert (ws / "untracked.txt").read_text() == "the user's untouched-by-agent edit\n"


def test_rewinding_to_the_rewind_takes_it_back(ws, fake):
    bash_turn(ws, fake, "echo agent > keep.txt", "edit")
    first = json.loads(rewind(ws, "--prompt", "1", "--what", "code").stdout)
    assert first["restored"] == ["keep.txt"]
    assert (ws / "keep.txt").read_text() == "keep v1\n"
    view = json.loads(ndomo(ws, "session", "open", "--json").stdout)
    (record,) = [t for t in view["turns"] if t["agent"] == "rewind"]
    rewind(ws, "--turn", str(record["id"]), "--what", "code")
    assert (ws / "keep.txt").read_text() == "agent\n"


def test_conversation_rewind_drops_the_later_messages_from_the_next_request(ws, fake):
    def ask(prompt: str, answer: str) -> None:
        fake.push({"text": answer})
        ndomo(ws, "run", "--json", prompt, fake=fake)

    ask("first question", "first answer")
    ask("second question", "second answer")
    ask("third question", "third answer")
    # typed as a slash command in `ndomo run` (the CLI's `ndomo session rewind` is the same action)
    out = ndomo(ws, "run", "--json", "/session rewind --prompt 2 --what conversation", fake=fake)
    payload = json.loads(out.stdout[out.stdout.index("{") :])["payload"]
    assert payload["messages_dropped"] == 4  # two prompts, two answers
    ask("another second question", "ok")
    sent = fake.chat_requests()[-1]["body"]["messages"]
    assert [(m["role"], m["content"]) for m in sent[1:]] == [
        ("user", "first question"),
        ("assistant", "first answer"),
        ("user", "another second question"),
    ]


def _commits(ws: Path, turn_id: int) -> dict[str, str]:
    db = sqlite3.connect(ws / ".ndomo" / "ndomo.db")
    try:
        rows = db.execute(
            "SELECT kind, commit_id FROM checkpoints WHERE turn_id = ? ORDER BY id", (turn_id,)
        ).fetchall()
    finally:
        db.close()
    return dict(rows)


def test_an_answer_without_tools_ends_at_its_start_snapshot(ws, fake, tmp_path):
    """A turn that ran no tool but reads cannot have changed a file: its start snapshot is
    its end (no git process at the turn's end). A file the user saves while the answer
    streams is then the user's change, not the turn's; a command's turn takes a new end."""
    gate = tmp_path / "gate"
    fake.push({"text": "an answer", "chunks": 3, "hold_until": str(gate)})
    env = server_env({"NDOMO_BASE_URL": fake.url})
    run = [sys.executable, "-m", "ndomo", "run", "--json", "--mode", "autopilot", "tell me"]
    with subprocess.Popen(
        [*run, "--workspace", str(ws)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=env,
    ) as proc:
        try:
            deadline = time.monotonic() + 60
            while not fake.chat_requests() and time.monotonic() < deadline:
                time.sleep(0.05)
            (ws / "saved-meanwhile.txt").write_text("the user's\n")
            gate.write_text("go")
            out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 0, out + err
    answered = json.loads(out[out.index("\n{") + 1 :] if not out.startswith("{") else out)
    marks = _commits(ws, answered["turn_id"])
    assert marks["turn_end"] == marks["turn_start"]

    edited = bash_turn(ws, fake, "echo agent > agent.txt", "write it")
    marks = _commits(ws, edited["turn_id"])
    assert marks["turn_end"] != marks["turn_start"]  # the command's turn: a new end
