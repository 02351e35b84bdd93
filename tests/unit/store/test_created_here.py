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
