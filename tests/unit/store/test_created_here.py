"""A database ndomo creates is its user's own at every moment another process can look:
an editor loading the folder while `ndomo run` creates the store must not take that store
for one ndomo did not create here (it would keep its sessions in a private database, and
the plans written from the terminal would not show in the editor)."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from ndomo.store import user
from ndomo.store.store import PlanStore

LOOK = """
import sys
from pathlib import Path
from ndomo.store.user import created_here
print(created_here(sys.argv[1], Path(sys.argv[2])))
"""


def _look(workspace: str, db: Path) -> str:
    """What another process loading the folder concludes (its own interpreter and connections)."""
    done = subprocess.run(
        [sys.executable, "-c", LOOK, workspace, str(db)],
        capture_output=True, text=True, timeout=60, env=os.environ.copy(),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


async def test_the_new_database_is_ours_whenever_another_process_looks(tmp_path, monkeypatch):
    db = tmp_path / ".ndomo" / "ndomo.db"
    workspace = os.path.realpath(tmp_path)
    seen: list[tuple[str, int, str]] = []
    real = user._connect

    @contextlib.contextmanager
    def watched():
        # before and after the user's store is written: the file's id as it is on disk,
        # and what another process makes of it
        ids = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)
        try:
            seen.append(
                ("before", ids.execute("PRAGMA application_id").fetchone()[0], _look(workspace, db))
            )
            with real() as conn:
                yield conn
            seen.append(
                ("after", ids.execute("PRAGMA application_id").fetchone()[0], _look(workspace, db))
            )
        finally:
            ids.close()

    monkeypatch.setattr(user, "_connect", watched)
    store = await PlanStore.open(db, workspace=tmp_path)
    monkeypatch.setattr(user, "_connect", real)
    try:
        assert [s[0] for s in seen] == ["before", "after"], seen
        assert all(verdict == "True" for _, _, verdict in seen), seen
        assert _look(workspace, db) == "True"
        assert user.db_identity(db) != 0
    finally:
        await store.close()


CREATE_PAUSED = """
import asyncio, sys
from pathlib import Path
import ndomo.store.store as store_mod
from ndomo.store.store import PlanStore

real = store_mod.stamp_new_db

def paused(conn, workspace):
    # the file exists (in WAL) with no id and no schema: say so, wait for the go
    print("ready", flush=True)
    sys.stdin.readline()
    real(conn, workspace)

store_mod.stamp_new_db = paused

async def main():
    store = await PlanStore.open(Path(sys.argv[1]), workspace=Path(sys.argv[2]))
    await store.close()
    print("done", flush=True)

asyncio.run(main())
"""


class _Conn:
    """A connection whose close runs `after_close` once (the other process's next step)."""

    def __init__(self, conn: sqlite3.Connection, after_close) -> None:
        self._conn = conn
        self._after_close = after_close

    def execute(self, *args):
        return self._conn.execute(*args)

    def close(self) -> None:
        self._conn.close()
        after, self._after_close = self._after_close, None
        if after is not None:
            after()


def test_a_look_that_straddles_the_creation_is_not_foreign(tmp_path, monkeypatch):
    """The other process finishes creating the database (id, then schema) between two
    reads of one look: the look must answer from one moment, not from "no id" read before
    and "tables" read after (which it took for a database ndomo did not create here)."""
    db = tmp_path / ".ndomo" / "ndomo.db"
    workspace = os.path.realpath(tmp_path)
    maker = subprocess.Popen(
        [sys.executable, "-c", CREATE_PAUSED, str(db), str(tmp_path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=os.environ.copy(),
    )  # fmt: skip
    try:
        assert maker.stdout is not None and maker.stdin is not None
        assert maker.stdout.readline().strip() == "ready"
        assert db.is_file() and user.db_identity(db) == 0

        def finish() -> None:
            maker.stdin.write("go\n")
            maker.stdin.flush()
            assert maker.stdout.readline().strip() == "done"

        real = sqlite3.connect
        pending = [finish]

        def connect(target, *args, **kw):
            conn = real(target, *args, **kw)
            if "mode=ro" in str(target) and pending:
                return _Conn(conn, pending.pop())
            return conn

        monkeypatch.setattr(user.sqlite3, "connect", connect)
        verdict = user.created_here(workspace, db)
        monkeypatch.setattr(user.sqlite3, "connect", real)
        assert not pending, "the creation was not finished during the look"
        assert verdict is True
        assert user.created_here(workspace, db) is True  # and once created, still ours
    finally:
        if maker.stdin is not None and not maker.stdin.closed:
            maker.stdin.close()
        maker.wait(timeout=60)


async def test_a_read_that_fails_for_a_moment_is_taken_again(tmp_path, monkeypatch):
    """While another process creates or closes the database, a read-only open can fail
    ("disk I/O error", "unable to open database file"): that is not an answer."""
    db = tmp_path / ".ndomo" / "ndomo.db"
    store = await PlanStore.open(db, workspace=tmp_path)
    await store.close()
    real = sqlite3.connect
    failures = [sqlite3.OperationalError("disk I/O error")] * 3

    def connect(target, *args, **kw):
        if "mode=ro" in str(target) and failures:
            raise failures.pop()
        return real(target, *args, **kw)

    monkeypatch.setattr(user.sqlite3, "connect", connect)
    assert user.created_here(os.path.realpath(tmp_path), db) is True
    assert not failures


def test_a_file_that_is_not_a_database_is_not_ours_and_is_not_waited_on(tmp_path, monkeypatch):
    db = tmp_path / ".ndomo" / "ndomo.db"
    db.parent.mkdir()
    db.write_bytes(b"not a database, whatever its name says" * 100)
    sleeps: list[float] = []
    monkeypatch.setattr(user.time, "sleep", sleeps.append)
    assert user.created_here(os.path.realpath(tmp_path), db) is False
    assert sleeps == []
