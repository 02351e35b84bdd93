"""The shadow repository on its own (real git, real files): a workspace without git, a
binary file byte for byte, a file over the limit named and left alone, a restore."""

from __future__ import annotations

import shutil

import pytest

from ndomo.features.checkpoints import shadow as sh
from ndomo.features.checkpoints.shadow import Shadow

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


async def test_a_workspace_without_git_is_snapshotted_and_restored(tmp_path, monkeypatch):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("a1\n")
    blob = bytes(range(256)) * 64
    (ws / "img.bin").write_bytes(blob)
    monkeypatch.setattr(sh, "MAX_FILE_BYTES", 1024 * 1024)
    shadow = Shadow(ws, tmp_path / "data" / "cp")
    first = await shadow.snapshot()
    assert first.notes == []
    assert not (ws / ".git").exists()  # nothing made in the workspace
    assert await shadow.snapshot() == first  # nothing changed: the same snapshot

    (ws / "img.bin").write_bytes(b"\0")
    (ws / "a.txt").unlink()
    (ws / "big.dat").write_bytes(b"x" * (2 * 1024 * 1024))
    (ws / "new").mkdir()
    (ws / "new" / "n.txt").write_text("n\n")
    now = await shadow.snapshot()
    assert [n.split(":")[0] for n in now.notes] == ["big.dat"]  # named, not stored
    restored = await shadow.restore(first.commit, now.commit)
    assert restored == ["a.txt", "img.bin", "new/n.txt"]
    assert (ws / "img.bin").read_bytes() == blob
    assert (ws / "a.txt").read_text() == "a1\n"
    assert not (ws / "new").exists()
    assert (ws / "big.dat").stat().st_size == 2 * 1024 * 1024  # left as it is
    after = await shadow.snapshot()
    assert await shadow.diff(first.commit, after.commit) == {}


async def test_the_shadow_lives_in_the_users_data_keyed_by_the_real_path(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    (tmp_path / "ws").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "ws")
    a, b = sh.shadow_dir(tmp_path / "ws"), sh.shadow_dir(tmp_path / "link")
    assert a == b and a.parent == tmp_path / "data" / "ndomo" / "checkpoints"


async def test_an_unchanged_workspace_is_snapshotted_with_one_git_process(tmp_path, monkeypatch):
    # The last snapshot's id is read from the ref's file: `rev-parse` was a second git
    # process on every turn's way to its answer.
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("a\n")
    shadow = Shadow(ws, tmp_path / "data" / "cp")
    first = await shadow.snapshot()
    ran: list[str] = []
    real = Shadow.git

    async def counted(self, *args, **kw):
        ran.append(args[0])
        return await real(self, *args, **kw)

    monkeypatch.setattr(Shadow, "git", counted)
    assert await shadow.snapshot() == first
    assert ran == ["ls-files"]


async def test_a_packed_ref_is_still_the_last_snapshot(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("a\n")
    shadow = Shadow(ws, tmp_path / "data" / "cp")
    first = await shadow.snapshot()
    await shadow.git("pack-refs", "--all")  # no loose file left: rev-parse finds it
    assert not (shadow.git_dir / sh.REF).exists()
    assert await shadow.snapshot() == first
    (ws / "a.txt").write_text("b\n")
    second = await shadow.snapshot()
    assert second != first and await shadow.diff(first.commit, second.commit) == {"a.txt": "M"}
