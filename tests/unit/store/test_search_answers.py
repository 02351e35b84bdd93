"""Migration 21 (the plan's files in its FTS document, typed prefixes searched as their
terms) answers every search exactly as the statements before it did.

The same plans, files and tasks are written into two databases: one stays at v20 and is
searched with the statements v20's store ran (copied below, unchanged), the other is
upgraded in place to v21 midway (so both the migration's copy and the new triggers built
its documents) and searched through the store. Every shape the plan-search tool and
`ndomo.plan.search` accept is compared: rare and common words, a word in every plan,
numbers, short prefixes, prefixes with many terms, non-ASCII and underscored words, text
with a file or a folder (paths sharing words, case, punctuation), a folder alone,
archived plans included or not, and limits.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from ndomo.store import plan_ops
from ndomo.store.db import connect
from ndomo.store.migrations import LATEST_VERSION, migrate
from ndomo.store.store import PlanStore

# ------------------------------------------------------------ v20's search, as it was


def _old_fts_query(text: str) -> str | None:
    import re

    words = re.findall(r"\w+", text)
    if not words:
        return None
    return " ".join('"' + w.replace('"', '""') + '"*' for w in words)


def _old_search(
    conn: sqlite3.Connection, query: str | None, file_path: str | None, archived: bool, limit: int
) -> list[str]:
    where: list[str] = []
    params: list[object] = []
    by_text = query is not None and bool(query.strip())
    by_file = file_path is not None and bool(file_path.strip())
    if by_text:
        match = _old_fts_query(query or "")
        if match is None:
            return []
        params.append(match)
    live = "" if archived else " AND archived_at IS NULL"
    order = " ORDER BY updated_at DESC, search_key DESC"
    fp = (file_path or "").strip().rstrip("/")
    if not by_file:
        if not by_text:
            sql, params = plan_ops.list_sql(None, archived)
        else:
            sql = (
                "SELECT * FROM plans WHERE search_key IN (SELECT search_key FROM plans"
                " INDEXED BY idx_plans_search_rank WHERE search_key IN (SELECT rowid FROM"
                " plan_search WHERE plan_search MATCH ? ORDER BY rowid DESC LIMIT"
                f" {plan_ops.COMMON_HITS}){live}{order} LIMIT ?){order}"
            )
    else:
        if by_text:
            where.append("search_key IN (SELECT rowid FROM plan_search WHERE plan_search MATCH ?)")
        where.append(
            "id IN (SELECT plan_id FROM plan_files WHERE file_path = ?"
            " OR (file_path >= ? AND file_path < ?))"
        )
        params += [fp, fp + "/", fp + "0"]
        sql = (
            "SELECT * FROM plans WHERE id IN (SELECT id FROM plans INDEXED BY idx_plans_id_rank"
            f" WHERE {' AND '.join(where)}{live}{order} LIMIT ?){order}"
        )
        if fp and not by_text:
            n = conn.execute(plan_ops.BROAD_SQL, (fp, fp + "/", fp + "0", plan_ops.BROAD_FILES))
            if n.fetchone()[0] >= plan_ops.BROAD_FILES:
                sql, params = plan_ops.recent_under_sql(fp, archived)
    return [r[0] for r in conn.execute(sql, (*params, limit))]


# ------------------------------------------------------------ the same data in both

WORDS = ["cache", "cached", "caches", "caching", "router", "ledger", "Überweisung", "naïve"]
# "conf…": more terms than EXPAND_TERMS, so that prefix stays a prefix query
MANY = [f"conf{chr(97 + i)}x" for i in range(20)]
PATHS = [
    "src/a.py",
    "src/A.py",
    "Src/a.py",
    "src/a.py.bak",
    "lib/src/a.py",
    "src/a/b.py",
    "src/a/c/d.py",
    "src-x/y.py",
    "src.old/z.py",
    "src0/q.py",
    "docs/ä ö/x.md",
    "/abs/path.py",
    "a//b",
    "dir/",
    'q"x/y z.txt',
    "src/py",
]


def _plan_rows(i: int) -> tuple[str, str, str]:
    title = f"Plan {i}: {WORDS[i % len(WORDS)]} {MANY[i % len(MANY)]}"
    overview = f"overview of {WORDS[(i * 3) % len(WORDS)]} step_{i % 4} v{i % 3}"
    return f"p{i:03d}", title, overview


def _fill_first(conn: sqlite3.Connection, plans: int) -> None:
    """Plans with files and tasks, written before the upgrade."""
    ts = "2025-01-01T00:00:00.000Z"
    with conn:
        for i in range(plans):
            pid, title, overview = _plan_rows(i)
            conn.execute(
                "INSERT INTO plans(id, slug, title, overview, created_at, updated_at)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (pid, pid, title, overview, ts, ts),
            )
            files = {PATHS[i % len(PATHS)], PATHS[(i * 7 + 3) % len(PATHS)]}
            conn.executemany(
                "INSERT INTO plan_files(plan_id, file_path) VALUES (?, ?)",
                [(pid, f) for f in sorted(files)],
            )
            conn.executemany(
                "INSERT INTO plan_tasks(plan_id, ord, description) VALUES (?, ?, ?)",
                [(pid, k, f"task {k} on {WORDS[(i + k) % len(WORDS)]} 10{i}") for k in (1, 2)],
            )


def _change_after(conn: sqlite3.Connection, plans: int) -> None:
    """Writes after the upgrade (each moves a document through v21's triggers on one side)."""
    ts = "2025-01-01T00:00:00.000Z"
    with conn:
        for i in range(plans, plans + 30):  # new plans, then their files and tasks
            pid, title, overview = _plan_rows(i)
            conn.execute(
                "INSERT INTO plans(id, slug, title, overview, created_at, updated_at)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (pid, pid, title, overview, ts, ts),
            )
            conn.execute(
                "INSERT INTO plan_files(plan_id, file_path) VALUES (?, ?)",
                (pid, PATHS[(i * 5) % len(PATHS)]),
            )
            conn.execute(
                "INSERT INTO plan_tasks(plan_id, ord, description) VALUES (?, 1, ?)",
                (pid, f"later {WORDS[i % len(WORDS)]}"),
            )
        conn.execute("DELETE FROM plan_files WHERE plan_id IN ('p001', 'p002')")
        conn.execute(
            "UPDATE OR IGNORE plan_files SET file_path = 'src/renamed.py' WHERE plan_id = 'p003'"
        )
        conn.execute("UPDATE OR IGNORE plan_files SET plan_id = 'p005' WHERE plan_id = 'p004'")
        conn.execute("UPDATE plan_tasks SET plan_id = 'p007' WHERE plan_id = 'p006'")
        conn.execute("UPDATE plan_tasks SET description = 'rewired router' WHERE plan_id = 'p008'")
        conn.execute("UPDATE plans SET title = 'Retitled ledger', overview = 'x' WHERE id = 'p009'")
        conn.execute("DELETE FROM plan_tasks WHERE plan_id = 'p010'")
        conn.execute("DELETE FROM plans WHERE id IN ('p011', 'p012')")
        # recency and archiving, the same on both sides (the touch triggers stamp "now")
        conn.execute(
            "UPDATE plans SET updated_at = printf('2025-02-%02dT00:00:00.000Z',"
            " 1 + (CAST(substr(id, 2) AS INTEGER) * 7) % 20)"
        )
        conn.execute(
            "UPDATE plans SET archived_at = '2025-03-01T00:00:00.000Z'"
            " WHERE CAST(substr(id, 2) AS INTEGER) % 5 = 0"
        )


TEXTS = [
    "cache",
    "cach",
    "caching",
    "CACHE",
    "router ledger",
    "overview",  # in every plan
    "plan",
    "plan 1",
    "plan 12",
    "10",
    "101",
    "1012",
    "conf",
    "confa",
    "confax",
    "uberweisung",
    "Überweisung",
    "naive",
    "step_1",
    "v2",
    "zzz",
    "later",
    "rewired",
    "retitled",
    "?!",
    "task ledger 10",
    "src",  # a path's word is not the path's text
    "py",
]
FILES = [None, "", "src", "src/", "src/a.py", "src/A.py", "Src", "src/a", "src/a/c", "lib"]
FILES += ["src-x", "src.old", "docs/ä ö", "/abs", "/", "a", "a/", "dir", 'q"x', "src/renamed.py"]
FILES += ["nothing", "py"]


@pytest.fixture
async def pair(tmp_path: Path):
    old, new = tmp_path / "old.db", tmp_path / "new" / ".ndomo" / "ndomo.db"
    plans = 90
    for db in (old, new):
        conn = connect(db)
        migrate(conn, target=20)
        _fill_first(conn, plans)
        conn.close()
    conn = connect(new)
    assert migrate(conn) == LATEST_VERSION  # the upgrade in place, with plans in it
    conn.close()
    for db in (old, new):
        conn = connect(db)
        _change_after(conn, plans)
        conn.close()
    store = await PlanStore.open(new, workspace=new.parent.parent)
    raw = connect(old)
    try:
        yield store, raw
    finally:
        raw.close()
        await store.close()


@pytest.mark.parametrize(
    "common, expand, broad, many, rows, window, late, probes, tested",
    [
        (1000, 16, 2000, 2000, 128, 200, 64, 8, ""),
        (1000, 2, 3, 5, 3, 6, 3, 2, "range probe"),
        (4, 1, 1, 1, 1, 2, 1, 1, ""),
        (1000, 16, 1, 1, 128, 4, 0, 0, ""),
        (1000, 16, 1, 1, 128, 1, 64, 64, "probe"),
    ],
    ids=["defaults", "few-terms-broad-folders", "all-small", "window-no-late", "window-probes"],
)
async def test_every_search_shape_answers_as_v20_did(
    pair, monkeypatch, common, expand, broad, many, rows, window, late, probes, tested
):
    store, raw = pair
    # text + a broad folder: the newest `window` matches (or 1 per result, below) ranked,
    # up to `late` plans created before them and updated after tested (a stretch of the
    # matches read, or up to `probes` probed one by one; the walk answers past that)
    monkeypatch.setattr(plan_ops, "NEWEST_WINDOW", window)
    monkeypatch.setattr(plan_ops, "WINDOW_PER_LIMIT", 1)
    monkeypatch.setattr(plan_ops, "LATE_PLANS", late)
    monkeypatch.setattr(plan_ops, "LATE_PROBES", probes)
    ran: list[str] = []
    await store.trace(ran.append)
    answered: list[bool] = []  # per call of the window's path: it answered, not the walk
    newest = plan_ops.newest_matching

    def spy(*args, **kwargs):
        rows = newest(*args, **kwargs)
        answered.append(rows is not None)
        return rows

    monkeypatch.setattr(plan_ops, "newest_matching", spy)
    monkeypatch.setattr(plan_ops, "COMMON_HITS", common)
    monkeypatch.setattr(plan_ops, "EXPAND_TERMS", expand)
    monkeypatch.setattr(plan_ops, "BROAD_FILES", broad)
    monkeypatch.setattr(plan_ops, "BROAD_MATCHES", many)  # text + folder: walked from `many`
    monkeypatch.setattr(plan_ops, "TERM_ROWS", rows)  # the vocabulary read in batches of `rows`
    compared = nonempty = 0
    for text in [None, *TEXTS]:
        for fp in FILES:
            for archived in (False, True):
                for limit in (0, 1, 3, 1000):
                    got = [
                        p.id
                        for p in await store.search_plans(
                            text, file_path=fp, include_archived=archived, limit=limit
                        )
                    ]
                    want = _old_search(raw, text, fp, archived, limit)
                    assert got == want, (text, fp, archived, limit)
                    compared += 1
                    nonempty += bool(want)
    assert nonempty > compared // 3  # the shapes find plans, not only nothing
    await store.trace(None)
    if window < 10:  # the window's path answered some searches and left others to the walk
        assert any(answered) and not all(answered), answered
    # how late plans were tested: the stretch of matches below the window, probes
    assert _ran(plan_ops.RANGE_SQL, ran) == ("range" in tested)
    assert _ran(plan_ops.PROBE_SQL, ran) == ("probe" in tested)


def _ran(sql: str, traced: list[str]) -> bool:
    """Whether `sql` is among the traced statements (which hold their values in place)."""
    shape = re.compile(".+".join(re.escape(part) for part in sql.split("?")), re.S)
    return any(shape.fullmatch(t.strip()) for t in traced)


async def test_the_upgraded_documents_equal_freshly_written_ones(pair, tmp_path):
    """The migration's copy and v21's triggers build the same document for a plan."""
    store, _ = pair
    fresh = tmp_path / "fresh.db"
    conn = connect(fresh)
    migrate(conn)
    _fill_first(conn, 90)
    _change_after(conn, 90)
    conn.close()

    def docs(c: sqlite3.Connection) -> dict[str, tuple]:
        rows = c.execute(
            "SELECT p.id, s.title, s.overview, s.approach, s.tasks, s.files"
            " FROM plans p JOIN plan_search s ON s.rowid = p.search_key"
        )
        return {r[0]: (*r[1:5], sorted(r[5].split(" "))) for r in rows}

    upgraded = await store._db.call(docs)
    conn = connect(fresh)
    try:
        assert docs(conn) == upgraded
        assert len(upgraded) == 118
        conn.execute("INSERT INTO plan_search(plan_search) VALUES ('integrity-check')")
    finally:
        conn.close()
    await store._exec("INSERT INTO plan_search(plan_search) VALUES ('integrity-check')")


async def test_a_path_is_one_term_and_a_folder_is_every_one_above_a_file(store):
    """A file's tokens: the path exactly, and each folder above it (case, punctuation and
    shared words never make another path match; no typed word reaches a path's token)."""
    from tests.unit.store.conftest import make_plan

    a = await make_plan(store, "Alpha common", files=["src/a/b.py", "Lib/x y.md"])
    b = await make_plan(store, "Beta common", files=["src/a.py", "lib/x y.md"])
    for fp, want in [
        ("src", [b, a]),
        ("src/a", [a]),
        ("src/a.py", [b]),
        ("src/a/b.py", [a]),
        ("src/a/b.py/", [a]),
        ("src/a/b", []),
        ("src/a.p", []),
        ("Lib", [a]),
        ("lib", [b]),
        ("lib/x y.md", [b]),
        ("x y.md", []),
        ("b.py", []),
        ("a", []),
    ]:
        got = [p.id for p in await store.search_plans("common", file_path=fp)]
        assert got == [p.id for p in want], fp
        got = [p.id for p in await store.search_plans("alpha", file_path=fp)]
        assert got == [p.id for p in want if p is a], fp
    hex_of_src = b"src".hex()
    for text in ("src", "py", hex_of_src, hex_of_src[:3], "e000"):
        assert await store.search_plans(text) == [], text


async def test_a_typed_word_is_searched_as_the_terms_it_starts(store, monkeypatch):
    """A word longer than the prefix indexes is searched as the few terms it starts (no
    merge of every match first); a short word, a word starting many terms, and a word the
    tokenizer folds stay prefixes; a word starting none matches nothing."""
    from tests.unit.store.conftest import make_plan

    await make_plan(store, "Parser parsers parsing", overview="Überweisung naïve x_y")

    async def match(text: str) -> object:
        sql, params = await store._db.call(plan_ops.search_statement, text, None, False)
        return params[0] if sql else None

    assert await match("Pars") == '("parser" OR "parsers" OR "parsing")'
    assert await match("parsers x") == '("parsers") AND "x"*'
    assert await match("par") == '"par"*'
    assert await match("Überw naïve") == '"Überw"* AND "naïve"*'
    assert await match("x_y") == '"x_y"*'
    assert await match("parsed") is None
    monkeypatch.setattr(plan_ops, "EXPAND_TERMS", 2)
    assert await match("pars") == '"pars"*'
