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


async def test_git_starts_off_the_event_loops_thread(tmp_path, popen_threads):
    # A process started on the loop held it 1-4 ms (fork and exec, then asyncio's thread
    # that waits for the child), just after a turn's first token, while the answer streams.
    import threading

    started_on = popen_threads
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("a\n")
    shadow = Shadow(ws, tmp_path / "data" / "cp")
    first = await shadow.snapshot()  # init, ls-files, add, write-tree, commit-tree, update-ref
    (ws / "a.txt").write_text("b\n")
    assert await shadow.snapshot() != first
    assert len(started_on) >= 7
    assert threading.main_thread() not in started_on


async def test_a_cancelled_git_ends_before_the_cancel_returns(tmp_path):
    # The shadow's lock is let go only once git is gone: the next snapshot never meets an
    # index another git process is still writing.
    import asyncio

    mark = tmp_path / "ended"
    job = asyncio.ensure_future(
        sh._run(["sh", "-c", f"sleep 0.3; echo x > {mark}"], env={"PATH": "/usr/bin:/bin"})
    )
    await asyncio.sleep(0.05)
    job.cancel()
    with pytest.raises(asyncio.CancelledError):
        await job
    assert mark.read_text() == "x\n"


async def test_a_missing_git_is_a_readable_error(tmp_path):
    shadow = Shadow(tmp_path, tmp_path / "data" / "cp")
    with pytest.raises(sh.CheckpointError, match="git is not installed"):
        await sh._run(["git"], env={"PATH": str(tmp_path / "nowhere")})
    gone = tmp_path / "gone"
    with pytest.raises(sh.CheckpointError, match="cannot run git"):
        await sh._run(["git", "status"], env=shadow.env(), cwd=gone)
