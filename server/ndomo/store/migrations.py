"""Numbered schema migrations, each applied in its own transaction and recorded in schema_version.

The list is history: never edit an applied step, append a new one. Steps are SQL
scripts or callables taking the connection (inside the step's transaction). `migrate`
runs on the store's thread (synchronously), before the store answers anything.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass

from ndomo.store.db import BEGIN_ATTEMPTS, BeginBusy, begin_backoff, now, split_sql, transaction
from ndomo.store.model_caps import V14_MODEL_CAPS

Step = str | Callable[[sqlite3.Connection], None]


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    step: Step


def add_column_if_missing(conn: sqlite3.Connection, table: str, column: str, decl: str) -> bool:
    """ALTER TABLE … ADD COLUMN unless present; True when it added the column."""
    names = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
    if column in names:
        return False
    conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {decl}")
    return True


def _write_once(table: str, column: str) -> str:
    return f"""
CREATE TRIGGER IF NOT EXISTS {table}_{column}_write_once
BEFORE UPDATE OF {column} ON {table}
WHEN OLD.{column} IS NOT NULL AND NEW.{column} IS NOT OLD.{column}
BEGIN
  SELECT RAISE(ABORT, 'write-once: {table}.{column} is already set');
END;
"""


V1_CORE = """
CREATE TABLE IF NOT EXISTS sessions (
  id TEXT PRIMARY KEY,
  created_at TEXT NOT NULL,
  ended_at TEXT,
  mode TEXT,
  agent TEXT,
  committed_plan_id TEXT,
  title TEXT,
  metadata TEXT NOT NULL DEFAULT '{}'
);
CREATE TABLE IF NOT EXISTS plans (
  id TEXT PRIMARY KEY,
  slug TEXT NOT NULL UNIQUE,
  title TEXT NOT NULL,
  overview TEXT NOT NULL CHECK (length(overview) > 0),
  approach TEXT,
  priority TEXT NOT NULL DEFAULT 'medium',
  complexity INTEGER CHECK (complexity IS NULL OR complexity BETWEEN 1 AND 5),
  category TEXT,
  metadata TEXT NOT NULL DEFAULT '{}',
  status TEXT NOT NULL DEFAULT 'draft'
    CHECK (status IN ('draft','approved','executing','completed','failed','abandoned')),
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  archived_at TEXT,
  archive_path TEXT,
  session_id TEXT REFERENCES sessions(id) ON DELETE SET NULL
);
CREATE INDEX IF NOT EXISTS idx_plans_status ON plans(status);
CREATE TABLE IF NOT EXISTS plan_tasks (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  plan_id TEXT NOT NULL REFERENCES plans(id) ON DELETE CASCADE,
  ord INTEGER NOT NULL,
  description TEXT NOT NULL,
  agent TEXT,
  files TEXT NOT NULL DEFAULT '[]',
  complexity INTEGER,
  status TEXT NOT NULL DEFAULT 'pending'
    CHECK (status IN ('pending','running','done','failed','blocked')),
  result TEXT,
  error TEXT,
  dependencies TEXT NOT NULL DEFAULT '[]',
  metadata TEXT NOT NULL DEFAULT '{}',
  tokens INTEGER,
  duration_ms INTEGER,
  started_at TEXT,
  finished_at TEXT,
  claimed_by TEXT
);
CREATE INDEX IF NOT EXISTS idx_tasks_plan ON plan_tasks(plan_id, ord);
CREATE INDEX IF NOT EXISTS idx_tasks_claim ON plan_tasks(status, agent);
CREATE TABLE IF NOT EXISTS plan_tags (
  plan_id TEXT NOT NULL REFERENCES plans(id) ON DELETE CASCADE,
  tag TEXT NOT NULL,
  PRIMARY KEY (plan_id, tag)
);
"""

V2_FTS = """
CREATE VIRTUAL TABLE IF NOT EXISTS plans_fts USING fts5(
  plan_id UNINDEXED, title, overview, approach, tokenize = 'unicode61 remove_diacritics 2'
);
CREATE VIRTUAL TABLE IF NOT EXISTS tasks_fts USING fts5(
  plan_id UNINDEXED, description, tokenize = 'unicode61 remove_diacritics 2'
);
CREATE TRIGGER IF NOT EXISTS plans_fts_ai AFTER INSERT ON plans BEGIN
  INSERT INTO plans_fts(plan_id, title, overview, approach)
  VALUES (NEW.id, NEW.title, NEW.overview, coalesce(NEW.approach, ''));
END;
CREATE TRIGGER IF NOT EXISTS plans_fts_au AFTER UPDATE OF title, overview, approach ON plans BEGIN
  DELETE FROM plans_fts WHERE plan_id = OLD.id;
  INSERT INTO plans_fts(plan_id, title, overview, approach)
  VALUES (NEW.id, NEW.title, NEW.overview, coalesce(NEW.approach, ''));
END;
CREATE TRIGGER IF NOT EXISTS plans_fts_ad AFTER DELETE ON plans BEGIN
  DELETE FROM plans_fts WHERE plan_id = OLD.id;
END;
CREATE TRIGGER IF NOT EXISTS tasks_fts_ai AFTER INSERT ON plan_tasks BEGIN
  INSERT INTO tasks_fts(rowid, plan_id, description) VALUES (NEW.id, NEW.plan_id, NEW.description);
END;
CREATE TRIGGER IF NOT EXISTS tasks_fts_au AFTER UPDATE OF description ON plan_tasks BEGIN
  DELETE FROM tasks_fts WHERE rowid = OLD.id;
  INSERT INTO tasks_fts(rowid, plan_id, description) VALUES (NEW.id, NEW.plan_id, NEW.description);
END;
CREATE TRIGGER IF NOT EXISTS tasks_fts_ad AFTER DELETE ON plan_tasks BEGIN
  DELETE FROM tasks_fts WHERE rowid = OLD.id;
END;
INSERT INTO plans_fts(plan_id, title, overview, approach)
  SELECT id, title, overview, coalesce(approach, '') FROM plans
  WHERE id NOT IN (SELECT plan_id FROM plans_fts);
INSERT INTO tasks_fts(rowid, plan_id, description)
  SELECT id, plan_id, description FROM plan_tasks WHERE id NOT IN (SELECT rowid FROM tasks_fts);
"""

# No foreign key: the audit trail outlives a deleted plan.
V3_AUDIT = """
CREATE TABLE IF NOT EXISTS plan_audit (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  plan_id TEXT NOT NULL,
  at TEXT NOT NULL,
  actor TEXT,
  from_status TEXT,
  to_status TEXT NOT NULL,
  forced INTEGER NOT NULL DEFAULT 0,
  reason TEXT
);
CREATE INDEX IF NOT EXISTS idx_audit_plan ON plan_audit(plan_id, id);
"""


def _v4_original_plan_data(conn: sqlite3.Connection) -> None:
    add_column_if_missing(conn, "plans", "original_plan_data", "TEXT")
    add_column_if_missing(conn, "plan_tasks", "original_plan_data", "TEXT")
    for stmt in split_sql(_write_once("plans", "original_plan_data")):
        conn.execute(stmt)
    for stmt in split_sql(_write_once("plan_tasks", "original_plan_data")):
        conn.execute(stmt)


V5_FILES = """
CREATE TABLE IF NOT EXISTS plan_files (
  plan_id TEXT NOT NULL REFERENCES plans(id) ON DELETE CASCADE,
  file_path TEXT NOT NULL,
  role TEXT,
  PRIMARY KEY (plan_id, file_path)
);
CREATE INDEX IF NOT EXISTS idx_plan_files_path ON plan_files(file_path);
"""


def _v6_agents(conn: sqlite3.Connection) -> None:
    add_column_if_missing(conn, "plans", "created_by_agent", "TEXT")
    add_column_if_missing(conn, "plans", "executed_by_agent", "TEXT")
    add_column_if_missing(
        conn, "plans", "executed_by_session", "TEXT REFERENCES sessions(id) ON DELETE SET NULL"
    )
    for col in ("created_by_agent", "executed_by_agent", "executed_by_session"):
        for stmt in split_sql(_write_once("plans", col)):
            conn.execute(stmt)


V7_TURNS = """
CREATE TABLE IF NOT EXISTS turns (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  parent_turn_id INTEGER REFERENCES turns(id) ON DELETE SET NULL,
  agent TEXT,
  mode TEXT,
  prompt TEXT,
  status TEXT NOT NULL DEFAULT 'running'
    CHECK (status IN ('running','done','cancelled','failed','blocked','capped','interrupted')),
  tokens_in INTEGER NOT NULL DEFAULT 0,
  tokens_out INTEGER NOT NULL DEFAULT 0,
  started_at TEXT NOT NULL,
  finished_at TEXT,
  error TEXT
);
CREATE INDEX IF NOT EXISTS idx_turns_session ON turns(session_id, id);
CREATE TABLE IF NOT EXISTS turn_edits (
  turn_id INTEGER NOT NULL REFERENCES turns(id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,
  path TEXT NOT NULL,
  before TEXT,
  after TEXT,
  PRIMARY KEY (turn_id, seq)
);
"""

V8_APPROVALS = """
CREATE TABLE IF NOT EXISTS approvals (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  scope TEXT NOT NULL CHECK (scope IN ('session','project')),
  session_id TEXT REFERENCES sessions(id) ON DELETE CASCADE,
  permission TEXT NOT NULL,
  pattern TEXT NOT NULL,
  action TEXT NOT NULL CHECK (action IN ('allow','deny')),
  created_at TEXT NOT NULL,
  CHECK (scope = 'project' OR session_id IS NOT NULL)
);
CREATE INDEX IF NOT EXISTS idx_approvals_perm ON approvals(permission);
"""

V9_MEMORIES = """
CREATE TABLE IF NOT EXISTS memories (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  session_id TEXT REFERENCES sessions(id) ON DELETE SET NULL,
  category TEXT NOT NULL CHECK (category IN ('fact','decision','preference')),
  content TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  hits INTEGER NOT NULL DEFAULT 0
);
CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5(
  content, tokenize = 'unicode61 remove_diacritics 2'
);
CREATE TRIGGER IF NOT EXISTS memories_fts_ai AFTER INSERT ON memories BEGIN
  INSERT INTO memories_fts(rowid, content) VALUES (NEW.id, NEW.content);
END;
CREATE TRIGGER IF NOT EXISTS memories_fts_au AFTER UPDATE OF content ON memories BEGIN
  DELETE FROM memories_fts WHERE rowid = OLD.id;
  INSERT INTO memories_fts(rowid, content) VALUES (NEW.id, NEW.content);
END;
CREATE TRIGGER IF NOT EXISTS memories_fts_ad AFTER DELETE ON memories BEGIN
  DELETE FROM memories_fts WHERE rowid = OLD.id;
END;
"""


def _v10_result_artifact(conn: sqlite3.Connection) -> None:
    add_column_if_missing(conn, "plan_tasks", "result_artifact", "TEXT")


def _v11_turn_owner(conn: sqlite3.Connection) -> None:
    # "<hostname>:<pid>" of the process running the turn: start-up recovery marks a
    # running turn interrupted only when that process is gone (several servers share a DB).
    add_column_if_missing(conn, "turns", "owner", "TEXT")
    conn.execute(
        "CREATE INDEX IF NOT EXISTS idx_turns_running ON turns(status) WHERE status = 'running'"
    )


# One FTS document per plan (its text and all its task descriptions), keyed by a stable
# integer plans.search_key, so a search reads only doclists and plans(updated_at,
# search_key) answers "newest 50 matching" without mapping every hit back to a plan id.
# plans.rowid is not used as the key: VACUUM may renumber it.
_PLAN_DOC = """
INSERT INTO plan_search(rowid, title, overview, approach, tasks)
  SELECT p.search_key, p.title, p.overview, coalesce(p.approach, ''),
         coalesce((SELECT group_concat(description, char(10)) FROM plan_tasks WHERE plan_id = p.id), '')
  FROM plans p WHERE {where};
"""


def _redo_doc(plan: str) -> str:
    return (
        f"DELETE FROM plan_search WHERE rowid = (SELECT search_key FROM plans WHERE id = {plan});"
        + _PLAN_DOC.format(where=f"p.id = {plan}")
    )


V12_SEARCH = f"""
UPDATE plans SET search_key = rowid WHERE search_key IS NULL;
CREATE UNIQUE INDEX IF NOT EXISTS idx_plans_search_key ON plans(search_key);
CREATE INDEX IF NOT EXISTS idx_plans_recent ON plans(updated_at, search_key) WHERE archived_at IS NULL;
CREATE INDEX IF NOT EXISTS idx_plans_open ON plans(created_at)
  WHERE status IN ('draft', 'approved', 'executing');
CREATE INDEX IF NOT EXISTS idx_tasks_ready ON plan_tasks(agent, status, plan_id, ord);
DROP TRIGGER IF EXISTS plans_fts_ai;
DROP TRIGGER IF EXISTS plans_fts_au;
DROP TRIGGER IF EXISTS plans_fts_ad;
DROP TRIGGER IF EXISTS tasks_fts_ai;
DROP TRIGGER IF EXISTS tasks_fts_au;
DROP TRIGGER IF EXISTS tasks_fts_ad;
DROP TABLE IF EXISTS plans_fts;
DROP TABLE IF EXISTS tasks_fts;
CREATE VIRTUAL TABLE IF NOT EXISTS plan_search USING fts5(
  title, overview, approach, tasks, tokenize = 'unicode61 remove_diacritics 2'
);
CREATE TRIGGER IF NOT EXISTS plan_search_ai AFTER INSERT ON plans BEGIN
  UPDATE plans SET search_key = (SELECT coalesce(max(search_key), 0) + 1 FROM plans)
    WHERE rowid = NEW.rowid AND search_key IS NULL;
  {_PLAN_DOC.format(where="p.rowid = NEW.rowid")}
END;
CREATE TRIGGER IF NOT EXISTS plan_search_au AFTER UPDATE OF title, overview, approach ON plans BEGIN
  {_redo_doc("NEW.id")}
END;
CREATE TRIGGER IF NOT EXISTS plan_search_ad AFTER DELETE ON plans BEGIN
  DELETE FROM plan_search WHERE rowid = OLD.search_key;
END;
CREATE TRIGGER IF NOT EXISTS plan_search_tasks_ai AFTER INSERT ON plan_tasks BEGIN
  {_redo_doc("NEW.plan_id")}
END;
CREATE TRIGGER IF NOT EXISTS plan_search_tasks_au AFTER UPDATE OF description, plan_id ON plan_tasks BEGIN
  {_redo_doc("OLD.plan_id")}
  {_redo_doc("NEW.plan_id")}
END;
CREATE TRIGGER IF NOT EXISTS plan_search_tasks_ad AFTER DELETE ON plan_tasks BEGIN
  {_redo_doc("OLD.plan_id")}
END;
DELETE FROM plan_search;
{_PLAN_DOC.format(where="1")}
"""


def _v12_search(conn: sqlite3.Connection) -> None:
    add_column_if_missing(conn, "plans", "search_key", "INTEGER")
    for stmt in split_sql(V12_SEARCH):
        conn.execute(stmt)


# v15: every list the store answers walks an index in the order it returns; any write to a
# plan's tasks, tags or files, or to the plan row itself, moves plans.updated_at (in SQL,
# so another process's writes move it too), and a deleted plan leaves a row in
# plan_deletions: "which plans changed or went since T" is two range reads, and plan
# diagnostics re-read only those.
_TOUCH = "UPDATE plans SET updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') WHERE id = {plan};"
V15_INDEXES = f"""
DROP INDEX IF EXISTS idx_plans_status;
CREATE INDEX IF NOT EXISTS idx_plans_updated ON plans(updated_at, search_key);
CREATE INDEX IF NOT EXISTS idx_plans_status_all ON plans(status, updated_at, search_key);
CREATE INDEX IF NOT EXISTS idx_plans_status_live ON plans(status, updated_at, search_key)
  WHERE archived_at IS NULL;
CREATE INDEX IF NOT EXISTS idx_plans_live ON plans(updated_at)
  WHERE archived_at IS NULL AND status IN ('draft', 'approved', 'executing');
CREATE INDEX IF NOT EXISTS idx_tasks_pending ON plan_tasks(agent) WHERE status = 'pending';
CREATE TABLE IF NOT EXISTS plan_deletions (plan_id TEXT NOT NULL, at TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS idx_plan_deletions_at ON plan_deletions(at);
CREATE TRIGGER IF NOT EXISTS plans_deleted_ad AFTER DELETE ON plans BEGIN
  INSERT INTO plan_deletions(plan_id, at) VALUES (OLD.id, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));
END;
CREATE TRIGGER IF NOT EXISTS plans_touch_au AFTER UPDATE ON plans
  WHEN NEW.updated_at IS OLD.updated_at AND NEW.search_key IS OLD.search_key BEGIN
  {_TOUCH.format(plan="NEW.id")}
END;
CREATE TRIGGER IF NOT EXISTS plans_touch_tasks_ai AFTER INSERT ON plan_tasks BEGIN
  {_TOUCH.format(plan="NEW.plan_id")}
END;
CREATE TRIGGER IF NOT EXISTS plans_touch_tasks_au AFTER UPDATE ON plan_tasks BEGIN
  {_TOUCH.format(plan="NEW.plan_id")}
END;
CREATE TRIGGER IF NOT EXISTS plans_touch_tasks_ad AFTER DELETE ON plan_tasks BEGIN
  {_TOUCH.format(plan="OLD.plan_id")}
END;
CREATE TRIGGER IF NOT EXISTS plans_touch_files_ai AFTER INSERT ON plan_files BEGIN
  {_TOUCH.format(plan="NEW.plan_id")}
END;
CREATE TRIGGER IF NOT EXISTS plans_touch_files_ad AFTER DELETE ON plan_files BEGIN
  {_TOUCH.format(plan="OLD.plan_id")}
END;
CREATE TRIGGER IF NOT EXISTS plans_touch_tags_ai AFTER INSERT ON plan_tags BEGIN
  {_TOUCH.format(plan="NEW.plan_id")}
END;
CREATE TRIGGER IF NOT EXISTS plans_touch_tags_ad AFTER DELETE ON plan_tags BEGIN
  {_TOUCH.format(plan="OLD.plan_id")}
END;
"""


V13_MESSAGES = """
CREATE TABLE IF NOT EXISTS session_messages (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  turn_id INTEGER REFERENCES turns(id) ON DELETE SET NULL,
  role TEXT NOT NULL CHECK (role IN ('user','assistant','tool')),
  content TEXT,
  tool_calls TEXT NOT NULL DEFAULT '[]',
  tool_call_id TEXT,
  name TEXT,
  status TEXT,
  details TEXT,
  created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_session_messages ON session_messages(session_id, id);
CREATE TABLE IF NOT EXISTS session_claims (
  session_id TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
  owner TEXT NOT NULL,
  claimed_at TEXT NOT NULL
)
"""


def _v13_messages(conn: sqlite3.Connection) -> None:
    add_column_if_missing(conn, "sessions", "used_at", "TEXT")
    for stmt in split_sql(V13_MESSAGES):
        conn.execute(stmt)


# v16, flat at 100k plans: a search ranks its candidates by recency on a covering index and
# reads only the plans it returns (text: ≤ COMMON_HITS FTS hits on idx_plans_search_rank,
# where walking idx_plans_recent grew with the table for a rare word; files: the plans
# touching a file on idx_plans_id_rank, plan_files read on a covering (file_path, plan_id)).
# plan_search is rebuilt with prefix indexes for 1-3 characters: a short prefix ("p*",
# "12*") otherwise merges the doclists of every term it starts (19 ms at 100k plans for one
# letter, 0.3 ms with them). Its documents are copied, not recomputed.
V16_SEARCH = """
CREATE INDEX IF NOT EXISTS idx_plans_search_rank ON plans(search_key, updated_at, archived_at);
CREATE INDEX IF NOT EXISTS idx_plans_id_rank ON plans(id, updated_at, search_key, archived_at);
CREATE INDEX IF NOT EXISTS idx_plan_files_path_plan ON plan_files(file_path, plan_id);
DROP INDEX IF EXISTS idx_plan_files_path;
CREATE TEMP TABLE plan_search_v16 AS
  SELECT rowid AS k, title, overview, approach, tasks FROM plan_search;
DROP TABLE plan_search;
CREATE VIRTUAL TABLE plan_search USING fts5(
  title, overview, approach, tasks, tokenize = 'unicode61 remove_diacritics 2', prefix = '1 2 3'
);
INSERT INTO plan_search(rowid, title, overview, approach, tasks)
  SELECT k, title, overview, approach, tasks FROM temp.plan_search_v16;
DROP TABLE temp.plan_search_v16;
"""


# v17, a note's provenance: the mode of the turn that saved it and whether that turn's
# context held web content (a fetched page's words are not the user's). Older notes have
# no mode (origin unknown) and are taken as not from the web.
def _v17_note_provenance(conn: sqlite3.Connection) -> None:
    add_column_if_missing(conn, "memories", "mode", "TEXT")
    add_column_if_missing(conn, "memories", "from_web", "INTEGER NOT NULL DEFAULT 0")


# v18, checkpoints: the shadow-repository snapshot (a git commit id, see
# features/checkpoints) taken at a turn's start and end and before each shell command; and
# the conversation rewinds: the span of a session's messages each took back (the rows stay,
# they no longer go to the model). A table of its own, not a column of session_messages:
# the step stands whatever order the steps came in.
V18_CHECKPOINTS = """
CREATE TABLE IF NOT EXISTS checkpoints (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  turn_id INTEGER REFERENCES turns(id) ON DELETE CASCADE,
  kind TEXT NOT NULL CHECK (kind IN ('turn_start', 'turn_end', 'command')),
  commit_id TEXT NOT NULL,
  note TEXT,
  created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_checkpoints_turn ON checkpoints(turn_id, id);
CREATE INDEX IF NOT EXISTS idx_checkpoints_session ON checkpoints(session_id, id);
CREATE TABLE IF NOT EXISTS message_rewinds (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  first_id INTEGER NOT NULL,
  last_id INTEGER NOT NULL,
  created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_message_rewinds ON message_rewinds(session_id, first_id, last_id);
"""


# v19, a tool result's status (done, failed, refused, cancelled) as the turn saw it: the
# conversation view shows a refused or failed call the same after a reload. Rows stored
# before have none (a reader says done when there is a result). v13 creates the column too,
# so a table v13 makes after v19 ran (a database that had a gap at 13) has it.
def _v19_message_status(conn: sqlite3.Connection) -> None:
    add_column_if_missing(conn, "session_messages", "status", "TEXT")


# v20, what a conversation view shows again after a reload beyond a tool's status: a tool
# result's details (JSON: how its approval was decided, the sandbox its command ran in, the
# diffs of the files it changed) and a turn's selection (JSON: the file, lines and text a
# code action's turn is about). Rows stored before have neither (the views show none). v13
# creates `details` too, for a database that had a gap at 13 (as for v19's status).
def _v20_view_details(conn: sqlite3.Connection) -> None:
    add_column_if_missing(conn, "session_messages", "details", "TEXT")
    add_column_if_missing(conn, "turns", "selection", "TEXT")


# v21, a search by text and file in one FTS lookup: each plan's document gains a `files`
# column, so `word AND {files}: path` intersects the two doclists inside FTS5 (ranking
# every plan containing a common word, then filtering it by file, cost 10 ms at 100k
# plans). Its tokens: each file the plan touches (U+E000 and the hex of the path's UTF-8)
# and each folder above one (U+E001 and the hex of the folder): a file, or a folder
# whatever its depth, is one exact term. Hex keeps case and punctuation (a path cannot
# match another sharing its words); unicode61 keeps a private-use character inside a
# token, and no typed word reaches one (`\w` excludes them). Folders come from the path's
# segments (json_each over the path split at '/'): the prefix up to each '/'. The
# triggers rebuild the document from plans, tasks and files; adding or removing a file
# rewrites the files column. plan_search_terms (fts5vocab, a row per token instance, so
# the first term from a point is one seek) lists the terms a typed prefix stands for: a
# prefix with few terms is searched as those terms, streamed, instead of merging every
# match of the prefix first (6 ms for a word in every plan at 100k plans, 0.4 ms as one term).
_SEGMENTS = "json_each('[' || replace(json_quote(f.file_path), '/', '\",\"') || ']')"
_FILES_DOC = f"""coalesce((SELECT group_concat(tok, ' ') FROM (
    SELECT char(57344) || hex(file_path) AS tok FROM plan_files WHERE plan_id = {{plan}}
    UNION
    SELECT char(57345) || hex(substr(f.file_path, 1,
      d.key + (SELECT sum(length(s.value)) FROM {_SEGMENTS} s WHERE s.key <= d.key)))
    FROM plan_files f, {_SEGMENTS} d
    WHERE f.plan_id = {{plan}}
      AND d.key < length(f.file_path) - length(replace(f.file_path, '/', '')))), '')"""
_PLAN_DOC_V21 = f"""
INSERT INTO plan_search(rowid, title, overview, approach, tasks, files)
  SELECT p.search_key, p.title, p.overview, coalesce(p.approach, ''),
         coalesce((SELECT group_concat(description, char(10)) FROM plan_tasks WHERE plan_id = p.id), ''),
         {_FILES_DOC.format(plan="p.id")}
  FROM plans p WHERE {{where}};
"""


def _redo_doc_v21(plan: str) -> str:
    return (
        f"DELETE FROM plan_search WHERE rowid = (SELECT search_key FROM plans WHERE id = {plan});"
        + _PLAN_DOC_V21.format(where=f"p.id = {plan}")
    )


def _redo_files(plan: str) -> str:
    return (
        f"UPDATE plan_search SET files = {_FILES_DOC.format(plan=plan)}"
        f" WHERE rowid = (SELECT search_key FROM plans WHERE id = {plan});"
    )


V21_FILES = f"""
DROP TRIGGER IF EXISTS plan_search_ai;
DROP TRIGGER IF EXISTS plan_search_au;
DROP TRIGGER IF EXISTS plan_search_tasks_ai;
DROP TRIGGER IF EXISTS plan_search_tasks_au;
DROP TRIGGER IF EXISTS plan_search_tasks_ad;
CREATE TEMP TABLE plan_search_v21 AS
  SELECT rowid AS k, title, overview, approach, tasks FROM plan_search;
DROP TABLE plan_search;
CREATE VIRTUAL TABLE plan_search USING fts5(
  title, overview, approach, tasks, files,
  tokenize = 'unicode61 remove_diacritics 2', prefix = '1 2 3'
);
INSERT INTO plan_search(rowid, title, overview, approach, tasks, files)
  SELECT v.k, v.title, v.overview, v.approach, v.tasks, {_FILES_DOC.format(plan="p.id")}
  FROM temp.plan_search_v21 v JOIN plans p ON p.search_key = v.k;
DROP TABLE temp.plan_search_v21;
CREATE TRIGGER plan_search_ai AFTER INSERT ON plans BEGIN
  UPDATE plans SET search_key = (SELECT coalesce(max(search_key), 0) + 1 FROM plans)
    WHERE rowid = NEW.rowid AND search_key IS NULL;
  {_PLAN_DOC_V21.format(where="p.rowid = NEW.rowid")}
END;
CREATE TRIGGER plan_search_au AFTER UPDATE OF title, overview, approach ON plans BEGIN
  {_redo_doc_v21("NEW.id")}
END;
CREATE TRIGGER plan_search_tasks_ai AFTER INSERT ON plan_tasks BEGIN
  {_redo_doc_v21("NEW.plan_id")}
END;
CREATE TRIGGER plan_search_tasks_au AFTER UPDATE OF description, plan_id ON plan_tasks BEGIN
  {_redo_doc_v21("OLD.plan_id")}
  {_redo_doc_v21("NEW.plan_id")}
END;
CREATE TRIGGER plan_search_tasks_ad AFTER DELETE ON plan_tasks BEGIN
  {_redo_doc_v21("OLD.plan_id")}
END;
CREATE TRIGGER plan_search_files_ai AFTER INSERT ON plan_files BEGIN
  {_redo_files("NEW.plan_id")}
END;
CREATE TRIGGER plan_search_files_au AFTER UPDATE OF file_path, plan_id ON plan_files BEGIN
  {_redo_files("OLD.plan_id")}
  {_redo_files("NEW.plan_id")}
END;
CREATE TRIGGER plan_search_files_ad AFTER DELETE ON plan_files BEGIN
  {_redo_files("OLD.plan_id")}
END;
CREATE VIRTUAL TABLE plan_search_terms USING fts5vocab(plan_search, instance);
"""

MIGRATIONS: list[Migration] = [
    Migration(1, "sessions, plans, plan_tasks, plan_tags", V1_CORE),
    Migration(2, "fts5 over plans and tasks", V2_FTS),
    Migration(3, "plan_audit", V3_AUDIT),
    Migration(4, "original_plan_data (write-once)", _v4_original_plan_data),
    Migration(5, "plan_files", V5_FILES),
    Migration(6, "created_by_agent, executed_by_* (write-once)", _v6_agents),
    Migration(7, "turns, turn_edits", V7_TURNS),
    Migration(8, "approvals", V8_APPROVALS),
    Migration(9, "memories + fts", V9_MEMORIES),
    Migration(10, "plan_tasks.result_artifact", _v10_result_artifact),
    Migration(11, "turns.owner", _v11_turn_owner),
    Migration(12, "plan_search fts (one doc per plan), claim and recency indexes", _v12_search),
    Migration(13, "session_messages, session_claims, sessions.used_at", _v13_messages),
    Migration(14, "model_caps: what an endpoint + model can do", V14_MODEL_CAPS),
    Migration(
        15,
        "indexes for every listed order; writes move plans.updated_at; plan_deletions",
        V15_INDEXES,
    ),
    Migration(16, "searches ranked on covering indexes; plan_search prefix indexes", V16_SEARCH),
    Migration(17, "memories.mode, memories.from_web (a note's provenance)", _v17_note_provenance),
    Migration(18, "checkpoints, message_rewinds", V18_CHECKPOINTS),
    Migration(19, "session_messages.status (a tool result's status)", _v19_message_status),
    Migration(
        20,
        "session_messages.details, turns.selection (a view's cards after a reload)",
        _v20_view_details,
    ),
    Migration(21, "plan_search.files (text and file in one lookup), plan_search_terms", V21_FILES),
]
LATEST_VERSION = MIGRATIONS[-1].version

_VERSION_TABLE = """
CREATE TABLE IF NOT EXISTS schema_version (
  version INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  applied_at TEXT NOT NULL
)
"""


def current_version(conn: sqlite3.Connection) -> int:
    conn.execute(_VERSION_TABLE)
    return int(conn.execute("SELECT coalesce(max(version), 0) FROM schema_version").fetchone()[0])


def applied_versions(conn: sqlite3.Connection) -> set[int]:
    conn.execute(_VERSION_TABLE)
    return {int(r[0]) for r in conn.execute("SELECT version FROM schema_version")}


def migrate(conn: sqlite3.Connection, target: int | None = None) -> int:
    """Bring the schema up to `target` (default: latest); returns the resulting version.

    A step is applied when its version is missing, not when it is above the highest one
    applied: a migration merged late under a lower number (branches land in any order)
    still reaches databases that already have the later ones. Each step re-reads the
    applied set inside its own write transaction, so two processes opening a fresh file at
    once do not apply a step twice.
    """
    target = LATEST_VERSION if target is None else target
    if not 0 <= target <= LATEST_VERSION:
        raise ValueError(f"schema version {target} is not between 0 and {LATEST_VERSION}")
    version = current_version(conn)
    if version > LATEST_VERSION:
        raise RuntimeError(
            f"database schema v{version} is newer than this ndomo (v{LATEST_VERSION}); upgrade ndomo"
        )
    applied = applied_versions(conn)
    for mig in MIGRATIONS:
        if mig.version in applied or mig.version > target:
            continue
        for attempt in range(BEGIN_ATTEMPTS):
            try:
                transaction(conn, _apply, mig)
                break
            except BeginBusy as exc:
                if attempt == BEGIN_ATTEMPTS - 1:
                    raise exc.__cause__ or exc from None
            time.sleep(begin_backoff(attempt))  # on the store's thread, while opening
    return current_version(conn)


def _apply(conn: sqlite3.Connection, mig: Migration) -> None:
    if mig.version in applied_versions(conn):
        return  # another process applied it meanwhile
    if isinstance(mig.step, str):
        for stmt in split_sql(mig.step):
            conn.execute(stmt)
    else:
        mig.step(conn)
    conn.execute(
        "INSERT INTO schema_version(version, name, applied_at) VALUES (?, ?, ?)",
        (mig.version, mig.name, now()),
    )
