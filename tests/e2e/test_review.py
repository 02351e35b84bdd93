"""A turn's review as an editor gets it: the real `ndomo serve` over LSP, the scripted
model, the turn's `bash` in the real sandbox; `ndomo.review.show` lists what the turn
changed, `ndomo.review.apply` puts back only the rejected hunks."""

from __future__ import annotations

import shutil

import pytest
from lsprotocol import types

from tests.e2e.conftest import command
from tests.e2e.editor_support import EditorDisk
from tests.fakes.fake_model import FakeModel

pytestmark = pytest.mark.skipif(
    shutil.which("bwrap") is None or shutil.which("git") is None,
    reason="needs bubblewrap and git",
)

A = "one\ntwo\nthree\nfour\nfive\nsix\nseven\n"


@pytest.fixture
def client_name() -> str:
    return "visual-studio-code"  # the review is the same for every client: one run


def _edit(path: str, old: str, new: str) -> dict:
    return {"name": "edit", "arguments": {"path": path, "old_text": old, "new_text": new}}


@pytest.fixture
def ws(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text(A)
    (ws / "b.txt").write_text("b1\nb2\n")
    (ws / "gone.txt").write_text("to be deleted\n")
    (ws / "same.txt").write_text("untouched\n")
    return ws


async def test_rejected_hunks_go_back_accepted_stay_and_a_file_changed_since_is_refused(lsp, ws):
    script = [
        {"tool_calls": [_edit("a.txt", "two", "TWO"), _edit("a.txt", "six", "SIX")]},
        {"tool_calls": [_edit("b.txt", "b1", "B1")]},
        {
            "tool_calls": [
                {
                    "name": "bash",
                    "arguments": {
                        "command": "rm gone.txt && mkdir -p new && printf 'made\\n' > new/made.txt"
                    },
                }
            ]
        },
        {"text": "done"},
    ]
    disk = EditorDisk()
    with FakeModel(script=script) as fake:
        client = await lsp.start(
            ws,
            env={"NDOMO_BASE_URL": fake.url},
            init_options={"open_transcript": False},
            handlers={
                types.WORKSPACE_APPLY_EDIT: lambda p: disk.handler(p),
                # the `rm` is asked about: allowed once
                types.WINDOW_SHOW_MESSAGE_REQUEST: lambda p: types.MessageActionItem(title="Once"),
            },
        )
        turn = await command(
            client,
            "ndomo.turn",
            {"prompt": "change things", "agent": "craftsman", "mode": "autopilot"},
        )
        assert turn["status"] == "done", turn
        assert (ws / "new" / "made.txt").exists() and not (ws / "gone.txt").exists()

        review = await command(client, "ndomo.review.show", {})
        assert review["turn_id"] == turn["turn_id"]
        files = {f["path"]: f for f in review["files"]}
        assert sorted(files) == ["a.txt", "b.txt", "gone.txt", "new/made.txt"]
        assert [f["status"] for f in review["files"]] == [
            "modified",
            "modified",
            "deleted",
            "created",
        ]
        a = files["a.txt"]["hunks"]
        assert [(h["id"], h["old_start"], h["removed"], h["added"]) for h in a] == [
            ("a.txt#1", 2, ["two"], ["TWO"]),
            ("a.txt#2", 6, ["six"], ["SIX"]),
        ]
        assert files["new/made.txt"]["hunks"][0]["added"] == ["made"]
        assert files["gone.txt"]["hunks"][0]["removed"] == ["to be deleted"]

        # the user edits b.txt after the review: rejecting its hunk is refused, untouched
        (ws / "b.txt").write_text("B1\nb2\nmine\n")
        hashes = {path: f["hash"] for path, f in files.items()}
        applied = await command(
            client,
            "ndomo.review.apply",
            {
                "turn": review["turn_id"],
                "reject": ["a.txt#1", "new/made.txt#1", "gone.txt#1", "b.txt#1"],
                "hashes": hashes,
            },
        )
        assert applied["reverted"] == ["a.txt#1", "gone.txt#1", "new/made.txt#1"]
        assert sorted(applied["files"]) == ["a.txt", "gone.txt", "new/made.txt"]
        assert list(applied["refused"]) == ["b.txt"]
        assert "changed since the review" in applied["refused"]["b.txt"]

        # the rejected hunk is back, the accepted one stays
        assert (ws / "a.txt").read_text() == A.replace("six", "SIX")
        assert (ws / "gone.txt").read_text() == "to be deleted\n"  # deleted, rejected: back
        assert not (ws / "new" / "made.txt").exists()  # created, rejected: gone
        assert (ws / "b.txt").read_text() == "B1\nb2\nmine\n"  # refused: as the user left it
        assert (ws / "same.txt").read_text() == "untouched\n"

        # what is left to review: the accepted hunk, and b.txt as it is now
        again = await command(client, "ndomo.review.show", {"turn": review["turn_id"]})
        left = {f["path"]: [h["id"] for h in f["hunks"]] for f in again["files"]}
        assert left == {"a.txt": ["a.txt#1"], "b.txt": ["b.txt#1", "b.txt#2"]}

        # a stale id (the file's hunks are renumbered) or a bad one is an error, nothing written
        with pytest.raises(Exception, match="no such hunk"):
            await command(
                client,
                "ndomo.review.apply",
                {"turn": review["turn_id"], "reject": ["a.txt#2"], "hashes": hashes},
            )
        assert (ws / "a.txt").read_text() == A.replace("six", "SIX")

        # the applied review is a record (not a prompt): rewinding to it takes the review back
        view = await command(client, "ndomo.session.open", {})
        (record,) = [t for t in view["turns"] if t["agent"] == "review"]
        assert record["prompt"] == f"review of turn {review['turn_id']}"
        back = await command(client, "ndomo.session.rewind", {"turn": record["id"], "what": "code"})
        assert sorted(back["restored"]) == ["a.txt", "gone.txt", "new/made.txt"], back
        assert (ws / "a.txt").read_text() == A.replace("two", "TWO").replace("six", "SIX")
        assert not (ws / "gone.txt").exists()
        assert (ws / "new" / "made.txt").read_text() == "made\n"
        assert (ws / "b.txt").read_text() == "B1\nb2\nmine\n"  # the user's: left alone
