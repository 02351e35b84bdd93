from __future__ import annotations

import sqlite3
from contextlib import closing

import pytest

from ndomo.store.db import connect
from ndomo.store.migrations import (
    LATEST_VERSION,
    MIGRATIONS,
    add_column_if_missing,
    current_version,
    migrate,
)
from ndomo.store.store import PlanStore

# Rows each step's tables can hold, written with the columns that existed at that version.
SEEDS: dict[int, list[str]] = {
    1: [
        "INSERT INTO sessions(id, created_at) VALUES ('s1', '2024-01-01')",
        "INSERT INTO plans(id, slug, title, overview, status, created_at, updated_at, session_id)"
        " VALUES ('p1', 'old-plan', 'Old plan', 'legacy overview words', 'executing',"
        " '2024-01-01', '2024-01-01', 's1')",
        "INSERT INTO plan_tasks(plan_id, ord, description, agent, status)"
        " VALUES ('p1', 1, 'legacy task alpha', 'smith', 'pending')",
        "INSERT INTO plan_tasks(plan_id, ord, description, agent, status, dependencies)"
        " VALUES ('p1', 2, 'legacy task beta', 'smith', 'pending', '[1]')",
        "INSERT INTO plan_tags(plan_id, tag) VALUES ('p1', 'legacy')",
    ],
    3: [
        "INSERT INTO plan_audit(plan_id, at, actor, from_status, to_status)"
        " VALUES ('p1', '2024-01-01', 'u', 'draft', 'approved')"
    ],
    4: ["UPDATE plans SET original_plan_data = '{\"title\": \"Old plan\"}' WHERE id = 'p1'"],
    5: ["INSERT INTO plan_files(plan_id, file_path, role) VALUES ('p1', 'old.py', 'input')"],
    6: ["UPDATE plans SET created_by_agent = 'foreman' WHERE id = 'p1'"],
    7: [
        "INSERT INTO turns(session_id, agent, mode, prompt, status, started_at)"
        " VALUES ('s1', 'foreman', 'discussion', 'p', 'running', 'x')",
        "INSERT INTO turn_edits(turn_id, seq, path, before, after) VALUES (1, 1, 'a.py', NULL, 'x')",
    ],
    8: [
        "INSERT INTO approvals(scope, permission, pattern, action, created_at)"
        " VALUES ('project', 'bash', 'ls*', 'allow', 'x')"
    ],
    9: [
        "INSERT INTO memories(session_id, category, content, created_at, updated_at)"
        " VALUES ('s1', 'fact', 'legacy memory', 'x', 'x')"
    ],
}
TABLES = [
    "sessions",
    "plans",
    "plan_tasks",
    "plan_tags",
    "plan_audit",
    "plan_files",
    "turns",
    "turn_edits",
    "approvals",
    "memories",
]


def _counts(conn) -> dict[str, int]:
    out = {}
    for t in TABLES:
        try:
            with closing(conn.execute(f"SELECT count(*) FROM {t}")) as cur:
                out[t] = (cur.fetchone())[0]
        except sqlite3.OperationalError:
            pass
    return out


# Numbers fixed across parallel branches; a gap is allowed only for one reserved here.
RESERVED = {13}  # session messages (the conversation branch)
VERSIONS = [m.version for m in MIGRATIONS]


def test_versions_are_numbered_in_order():
    assert sorted(set(VERSIONS)) == VERSIONS
    assert set(range(1, LATEST_VERSION + 1)) - set(VERSIONS) <= RESERVED


@pytest.mark.parametrize("start", VERSIONS[:-1])
async def test_upgrade_from_every_earlier_version_keeps_rows(tmp_path, start):
    db = tmp_path / "old.db"
    conn = connect(db)
    assert migrate(conn, target=start) == start
    for v in range(1, start + 1):
        for sql in SEEDS.get(v, []):
            conn.execute(sql)
    before = _counts(conn)
    assert before["plans"] == 1
    conn.close()

    store = await PlanStore.open(db, workspace=tmp_path)
    try:
        assert await store._db.call(current_version) == LATEST_VERSION
        after = await store._db.call(_counts)
        assert {k: after[k] for k in before} == before
        plan = await store.get_plan("old-plan")
        assert plan.tags == ["legacy"] and [t.description for t in plan.tasks][:2] == [
            "legacy task alpha",
            "legacy task beta",
        ]
        # FTS built for pre-existing rows, write-once protects old data, new features work
        assert [p.id for p in await store.search_plans("legacy")] == ["p1"]
        if start >= 5:  # v21 built the plan's files into its search document
            found = await store.search_plans("legacy task", file_path="old.py")
            assert [p.id for p in found] == ["p1"]
            assert await store.search_plans("legacy", file_path="old") == []
        if start >= 4:
            with pytest.raises(sqlite3.IntegrityError):
                await store._exec("UPDATE plans SET original_plan_data = 'x' WHERE id = 'p1'")
        t = await store.next_task_for_agent("smith")
        assert t.description == "legacy task alpha"
        await store.update_task_status(t.id, "done")
        versions = [
            r[0] for r in await store._all("SELECT version FROM schema_version ORDER BY version")
        ]
        assert versions == VERSIONS
    finally:
        await store.close()


async def test_migrate_is_idempotent_and_rejects_newer_db(tmp_path):
    conn = connect(tmp_path / "x.db")
    try:
        assert migrate(conn) == LATEST_VERSION
        assert migrate(conn) == LATEST_VERSION
        conn.execute("INSERT INTO schema_version VALUES (999, 'future', 'x')")
        with pytest.raises(RuntimeError, match="newer"):
            migrate(conn)
        with pytest.raises(ValueError):
            migrate(conn, target=LATEST_VERSION + 1)
    finally:
        conn.close()


async def test_failed_step_rolls_back_alone(tmp_path, monkeypatch):
    from ndomo.store import migrations as m

    def boom(conn):
        conn.execute("CREATE TABLE half_done(x)")
        raise RuntimeError("step failed")

    broken = list(m.MIGRATIONS)
    broken[4] = m.Migration(5, "broken", boom)
    monkeypatch.setattr(m, "MIGRATIONS", broken)
    conn = connect(tmp_path / "y.db")
    try:
        with pytest.raises(RuntimeError, match="step failed"):
            m.migrate(conn)
        assert current_version(conn) == 4
        with closing(
            conn.execute("SELECT name FROM sqlite_master WHERE name = 'half_done'")
        ) as cur:
            assert cur.fetchone() is None
    finally:
        conn.close()


async def test_add_column_if_missing(tmp_path):
    conn = connect(tmp_path / "z.db")
    try:
        conn.execute("CREATE TABLE t(a)")
        assert add_column_if_missing(conn, "t", "b", "TEXT") is True
        assert add_column_if_missing(conn, "t", "b", "TEXT") is False
    finally:
        conn.close()


async def test_a_lower_numbered_migration_merged_late_is_still_applied(tmp_path, monkeypatch):
    """Branches land in any order: a database already at a later version still gets the step."""
    from ndomo.store import migrations as m

    later = m.Migration(LATEST_VERSION + 2, "later", "CREATE TABLE later_t(x)")
    monkeypatch.setattr(m, "MIGRATIONS", [*MIGRATIONS, later])
    monkeypatch.setattr(m, "LATEST_VERSION", later.version)
    conn = connect(tmp_path / "a.db")
    try:
        assert m.migrate(conn) == later.version
        late = m.Migration(LATEST_VERSION + 1, "late", "CREATE TABLE late_t(x)")
        monkeypatch.setattr(m, "MIGRATIONS", [*MIGRATIONS, late, later])
        assert m.migrate(conn) == later.version
        with closing(conn.execute("SELECT version FROM schema_version ORDER BY version")) as cur:
            assert [r[0] for r in cur.fetchall()][-2:] == [late.version, later.version]
        conn.execute("SELECT x FROM late_t")
    finally:
        conn.close()


async def test_a_step_missing_below_the_highest_is_still_applied(tmp_path):
    """A database from a build that had v14 but not v13 (numbers reserved across branches)."""
    db = tmp_path / "gap.db"
    conn = connect(db)
    assert migrate(conn) == LATEST_VERSION
    conn.execute("DROP TABLE session_messages")
    conn.execute("DROP TABLE session_claims")
    conn.execute("DELETE FROM schema_version WHERE version = 13")
    conn.commit()
    conn.close()
    store = await PlanStore.open(db, workspace=tmp_path)
    try:
        versions = [
            r[0] for r in await store._all("SELECT version FROM schema_version ORDER BY version")
        ]
        assert versions == VERSIONS
        await store.add_message("s", "user", "hello")  # the v13 table is back
        assert [m.content for m in await store.session_messages("s")] == ["hello"]
    finally:
        await store.close()
