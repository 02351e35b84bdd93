"""The user's own store, outside every workspace: `$XDG_DATA_HOME/ndomo/user.db`.

It keeps what a repository must never be able to ship or rewrite:
- the saved approvals ("always allow `npm test` here"), keyed by the workspace's real path
  (approvals found in a workspace's `.ndomo/ndomo.db` are ignored);
- the identity of every workspace database ndomo created for this user: a random 32-bit id
  written into the database's header (`PRAGMA application_id`) at creation and recorded
  here with the workspace's real path. A database whose id is not recorded for its folder
  (committed to git, copied from elsewhere) is not resumed until the user trusts the folder.

Small, rare statements on short-lived connections: callers run these through a thread.
"""

from __future__ import annotations

import contextlib
import secrets
import sqlite3
import time
from collections.abc import Iterator
from fnmatch import fnmatchcase
from pathlib import Path

from ndomo.config import user_data_dir
from ndomo.store.db import now
from ndomo.store.errors import NotFound

USER_DB = "user.db"

SCHEMA = """
CREATE TABLE IF NOT EXISTS approvals (
    id INTEGER PRIMARY KEY,
    workspace TEXT NOT NULL,
    scope TEXT NOT NULL CHECK (scope IN ('session', 'project')),
    session_id TEXT,
    permission TEXT NOT NULL,
    pattern TEXT NOT NULL,
    action TEXT NOT NULL CHECK (action IN ('allow', 'deny')),
    created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS approvals_workspace ON approvals(workspace, permission);
CREATE TABLE IF NOT EXISTS dbs (
    workspace TEXT NOT NULL,
    db_id INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (workspace, db_id)
);
"""


def user_db_path() -> Path:
    return user_data_dir() / USER_DB


@contextlib.contextmanager
def _connect() -> Iterator[sqlite3.Connection]:
    path = user_db_path()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    conn = sqlite3.connect(path, timeout=5.0)
    conn.row_factory = sqlite3.Row
    try:
        conn.executescript(SCHEMA)
        with conn:
            yield conn
    finally:
        conn.close()


# -- approvals -------------------------------------------------------------------------


def save_approval(
    workspace: str,
    permission: str,
    pattern: str,
    action: str,
    scope: str,
    session_id: str | None,
) -> dict:
    session_id = session_id if scope == "session" else None
    with _connect() as conn:
        found = conn.execute(
            "SELECT id FROM approvals WHERE workspace = ? AND scope = ?"
            " AND coalesce(session_id, '') = ? AND permission = ? AND pattern = ?",
            (workspace, scope, session_id or "", permission, pattern),
        ).fetchone()
        if found:
            aid = found[0]
            conn.execute(
                "UPDATE approvals SET action = ?, created_at = ? WHERE id = ?", (action, now(), aid)
            )
        else:
            aid = conn.execute(
                "INSERT INTO approvals(workspace, scope, session_id, permission, pattern, action,"
                " created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (workspace, scope, session_id, permission, pattern, action, now()),
            ).lastrowid
        row = conn.execute("SELECT * FROM approvals WHERE id = ?", (aid,)).fetchone()
        return _out(row)


def list_approvals(workspace: str, session_id: str | None) -> list[dict]:
    with _connect() as conn:
        rows = conn.execute(
            "SELECT * FROM approvals WHERE workspace = ? AND (scope = 'project' OR session_id = ?)"
            " ORDER BY id",
            (workspace, session_id),
        ).fetchall()
    return [_out(r) for r in rows]


def find_approval(
    workspace: str, permission: str, subject: str, session_id: str | None
) -> str | None:
    """'deny', 'allow' or None; patterns are fnmatch globs over the subject; deny wins."""
    hits = {action for _, action in matching_approvals(workspace, permission, subject, session_id)}
    if "deny" in hits:
        return "deny"
    return "allow" if "allow" in hits else None


def matching_approvals(
    workspace: str, permission: str, subject: str, session_id: str | None
) -> list[tuple[str, str]]:
    """(pattern, action) of the approvals whose fnmatch pattern matches the subject."""
    with _connect() as conn:
        rows = conn.execute(
            "SELECT pattern, action FROM approvals WHERE workspace = ? AND permission = ?"
            " AND (scope = 'project' OR session_id = ?)",
            (workspace, permission, session_id),
        ).fetchall()
    return [(r["pattern"], r["action"]) for r in rows if pattern_covers(r["pattern"], subject)]


def pattern_covers(pattern: str, subject: str) -> bool:
    """fnmatch over the subject; like a `bash` rule, `make lint *` also covers `make lint`."""
    if fnmatchcase(subject, pattern):
        return True
    return pattern.endswith(" *") and fnmatchcase(subject, pattern[:-2])


def revoke_approval(workspace: str, approval_id: int) -> None:
    with _connect() as conn:
        gone = conn.execute(
            "DELETE FROM approvals WHERE id = ? AND workspace = ?", (approval_id, workspace)
        ).rowcount
    if gone != 1:
        raise NotFound(f"no approval with id {approval_id}", field="id")


def _out(row: sqlite3.Row) -> dict:
    d = dict(row)
    d.pop("workspace", None)
    return d


# -- the databases ndomo created -------------------------------------------------------


# A read of another process's database can fail for a moment while it is being created
# or closed (SQLite reports "disk I/O error", "unable to open" or a readonly write while the
# WAL files come and go): such a read is taken again, never taken for an answer.
READ_ATTEMPTS = 20
READ_RETRY_S = 0.05


def _header(path: Path) -> tuple[int, int]:
    """(the id in the database's header or 0, how many schema objects it has), both from
    one read transaction: two separate reads could straddle the creating process's commits
    (no id yet, then tables) and take a database being created for one with no id."""
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=5.0)
    try:
        conn.execute("BEGIN")
        db_id = int(conn.execute("PRAGMA application_id").fetchone()[0])
        objects = int(conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0])
        conn.execute("COMMIT")
        return db_id, objects
    finally:
        conn.close()


def read_header(path: Path) -> tuple[int, int] | None:
    """`_header`, taken again while the read fails; None: it failed every time."""
    for attempt in range(READ_ATTEMPTS):
        try:
            return _header(path)
        except sqlite3.Error as exc:
            if getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_NOTADB:
                return None  # not a database at all: no later read differs
            if attempt < READ_ATTEMPTS - 1:
                time.sleep(READ_RETRY_S)
    return None


def db_identity(path: Path) -> int:
    """The id in a database's header (0: none, or unreadable), read without changing the file."""
    header = read_header(path)
    return header[0] if header else 0


def stamp_new_db(conn: sqlite3.Connection, workspace: str) -> None:
    """Give a database ndomo just created its id and record it as this user's.

    The record is written first: a process loading the folder meanwhile (an editor starting
    while `ndomo run` creates the store) sees either no id and no schema yet, or an id it
    finds recorded, never an id it would take for a database ndomo did not create here.
    """
    db_id = secrets.randbits(31) or 1
    with _connect() as user:
        user.execute(
            "INSERT OR IGNORE INTO dbs(workspace, db_id, created_at) VALUES (?, ?, ?)",
            (workspace, db_id, now()),
        )
    conn.execute(f"PRAGMA application_id = {db_id}")


def created_here(workspace: str, path: Path) -> bool:
    """Did ndomo create the database at `path` for this user, in this folder?

    A database with no id and no schema object is one another process is creating this
    moment (its id is written before its schema), or an empty file: nothing to resume.
    One that stays unreadable is not taken for this user's own (nor is it resumed: the
    store could not open it either).
    """
    header = read_header(path)
    if header is None:
        return False
    db_id, objects = header
    if not db_id:
        return objects == 0
    with _connect() as conn:
        found = conn.execute(
            "SELECT 1 FROM dbs WHERE workspace = ? AND db_id = ?", (workspace, db_id)
        ).fetchone()
    return found is not None
