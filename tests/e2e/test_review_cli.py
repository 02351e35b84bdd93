"""The review from the command line: `ndomo review show` after an `ndomo run` turn whose
`bash` runs in the real sandbox, then `/review apply` typed as a prompt."""

from __future__ import annotations

import json
import shlex

from tests.e2e.test_checkpoints import bash_turn, fake, ndomo, pytestmark, ws  # noqa: F401


def test_review_show_then_apply_typed_as_a_slash_command(ws, fake):  # noqa: F811
    turn = bash_turn(ws, fake, "echo agent > keep.txt && echo new > fresh.txt", "edit")
    review = json.loads(ndomo(ws, "review", "show", "--json").stdout)
    assert review["turn_id"] == turn["turn_id"]
    files = {f["path"]: f for f in review["files"]}
    assert sorted(files) == ["fresh.txt", "keep.txt"]
    assert files["keep.txt"]["hunks"][0]["removed"] == ["keep v1"]
    hashes = json.dumps({p: f["hash"] for p, f in files.items()})
    prompt = f"/review apply --turn {review['turn_id']} --reject keep.txt#1 --hashes {shlex.quote(hashes)}"
    out = ndomo(ws, "run", "--json", prompt, fake=fake)
    payload = json.loads(out.stdout[out.stdout.index("{") :])["payload"]
    assert payload["reverted"] == ["keep.txt#1"], payload
    assert (ws / "keep.txt").read_text() == "keep v1\n"  # rejected: back
    assert (ws / "fresh.txt").read_text() == "new\n"  # kept


def test_a_folder_the_turn_turned_into_a_link_out_is_not_written_through(ws, fake, tmp_path):  # noqa: F811
    """The turn's command replaces lib/ by a link to a folder outside the workspace; putting
    back the deleted lib/mod.py must not write into that folder."""
    outside = tmp_path / "home" / ".config"
    outside.mkdir(parents=True)
    (outside / "canary").write_text("canary\n")
    bash_turn(ws, fake, f"rm -r lib && ln -s {outside} lib", "relink")
    review = json.loads(ndomo(ws, "review", "show", "--json").stdout)
    files = {f["path"]: f for f in review["files"]}
    assert files["lib/mod.py"]["status"] == "deleted"
    args = [
        "review",
        "apply",
        "--json",
        "--turn",
        str(review["turn_id"]),
        "--reject",
        "lib/mod.py#1",
        "--hashes",
        json.dumps({"lib/mod.py": files["lib/mod.py"]["hash"]}),
    ]
    applied = json.loads(ndomo(ws, *args).stdout)
    assert "link out of the workspace" in applied["refused"]["lib/mod.py"], applied
    assert sorted(p.name for p in outside.iterdir()) == ["canary"]  # nothing written there
    assert (ws / "lib").is_symlink()
