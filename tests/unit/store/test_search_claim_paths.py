"""The indexed search and claim paths (migration 12) keep their results right."""

import sqlite3

from ndomo.store.migrations import migrate
from ndomo.store.models import TaskCreate
from ndomo.store.plan_ops import files_match, search_sql
from tests.unit.store.conftest import make_plan, to_status


def ids(plans):
    return [p.id for p in plans]


async def test_search_follows_task_edits_and_is_newest_first(store):
    a = await make_plan(store, "Alpha ledger", overview="Books.")
    b = await make_plan(store, "Beta", overview="Nothing here.")
    await store.create_tasks(b.id, [TaskCreate(description="rebuild the ledger index")])
    assert ids(await store.search_plans("ledger")) == [b.id, a.id]  # b was updated last
    assert ids(await store.search_plans("ledger", limit=1)) == [b.id]
    assert ids(await store.search_plans("rebuild index")) == [b.id]
    (t,) = await store.list_tasks(b.id)
    await store._exec("UPDATE plan_tasks SET description = 'polish wording' WHERE id = ?", (t.id,))
    assert ids(await store.search_plans("ledger")) == [a.id]
    assert ids(await store.search_plans("polish")) == [b.id]
    await store._exec("DELETE FROM plan_tasks WHERE id = ?", (t.id,))
    assert await store.search_plans("polish") == []


async def test_new_plans_get_unique_search_keys(store):
    plans = [await make_plan(store, f"Plan {i} widget") for i in range(5)]
    await store._exec("DELETE FROM plans WHERE id = ?", (plans[-1].id,))  # the highest key is freed
    c = await make_plan(store, "Plan after delete widget")
    keys = await store._all("SELECT search_key FROM plans")
    assert len({r[0] for r in keys}) == len(keys) == 5 and all(r[0] for r in keys)
    assert ids(await store.search_plans("widget"))[0] == c.id


async def test_text_only_search_ranks_its_hits_on_the_covering_index(store):
    """v16: the hits are ranked on idx_plans_search_rank; plans is never scanned."""
    sql, params = search_sql("word", None, include_archived=False)
    assert "INDEXED BY idx_plans_search_rank" in sql
    steps = [r[3] for r in await store._all("EXPLAIN QUERY PLAN " + sql, (*params, 50))]
    assert any("COVERING INDEX idx_plans_search_rank" in s for s in steps), steps
    assert not any(s.startswith("SCAN plans") for s in steps), steps
    # v21: text and a file are one MATCH (the file is a column of the document), its
    # matches ranked on the same covering index; neither plans nor plan_files is read
    file_sql, file_params = search_sql("word", "src/a.py", include_archived=False)
    assert file_params == ['("word"*) AND ' + files_match("src/a.py")]
    steps = [r[3] for r in await store._all("EXPLAIN QUERY PLAN " + file_sql, (*file_params, 9))]
    assert any("COVERING INDEX idx_plans_search_rank" in s for s in steps), steps
    assert any("VIRTUAL TABLE" in s for s in steps), steps
    assert not any(s.startswith(("SCAN plans", "SCAN plan_files")) for s in steps), steps
    assert "plan_files" not in file_sql
    assert search_sql("?!", None, False) == (None, [])


async def test_claim_takes_oldest_open_plan_first_and_waits_for_dependencies(store):
    old = await make_plan(store, "Old")
    new = await make_plan(store, "New", tasks=1)
    await store.create_tasks(
        old.id,
        [
            TaskCreate(description="first", agent="smith"),
            TaskCreate(description="second", agent="smith", dependencies=[1]),
            TaskCreate(description="other agent", agent="mason"),
        ],
    )
    first = await store.next_task_for_agent("smith")
    assert (first.plan_id, first.description) == (old.id, "first")
    nxt = await store.next_task_for_agent("smith")  # "second" waits for "first"
    assert (nxt.plan_id, nxt.description) == (new.id, "step 1")
    assert await store.next_task_for_agent("smith") is None
    await store.update_task_status(first.id, "done")
    assert (await store.next_task_for_agent("smith", plan_id=old.slug)).description == "second"
    assert (await store.next_task_for_agent("mason")).description == "other agent"


async def test_claim_skips_closed_plans(store):
    plan = await make_plan(store, "Closed", tasks=1)
    await to_status(store, plan.id, "abandoned")
    assert await store.next_task_for_agent("smith") is None


async def test_upgrade_builds_search_docs_from_existing_rows(tmp_path):
    from ndomo.store.db import connect

    conn = connect(tmp_path / "old.db")
    try:
        migrate(conn, target=11)
        conn.execute(
            "INSERT INTO plans(id, slug, title, overview, created_at, updated_at)"
            " VALUES ('p1', 'p1', 'Legacy', 'Old overview', 't', 't')"
        )
        conn.execute(
            "INSERT INTO plan_tasks(plan_id, ord, description) VALUES ('p1', 1, 'tune the zeppelin')"
        )
        migrate(conn)
        sql, params = search_sql("zeppelin", None, False)
        assert [r["id"] for r in conn.execute(sql, (*params, 10))] == ["p1"]
        assert (
            conn.execute(
                "SELECT name FROM sqlite_master WHERE name IN ('plans_fts', 'tasks_fts')"
            ).fetchall()
            == []
        )
    finally:
        conn.close()


async def test_a_claim_with_nothing_ready_never_takes_the_write_lock(store):
    """Pending but blocked tasks: "anything ready?" is answered outside the write lock, so
    a claim that finds nothing succeeds while another process holds the lock."""
    plan = await make_plan(store, "Blocked")
    await store.create_tasks(
        plan.id,
        [
            TaskCreate(description="first", agent="mason"),
            TaskCreate(description="second", agent="smith", dependencies=[1]),
        ],
    )
    await store._exec("PRAGMA busy_timeout = 0")  # a write would fail at once, not wait
    other = sqlite3.connect(store.db_path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        assert await store.next_task_for_agent("smith") is None
        assert await store.next_task_for_agent("smith", plan_id=plan.id) is None
        other.execute("COMMIT")
    finally:
        other.close()


async def test_a_picked_task_taken_meanwhile_is_replaced_by_the_next_ready_one(store, monkeypatch):
    from ndomo.store import task_ops

    plan = await make_plan(store, "Race", tasks=2)
    first, second = await store.list_tasks(plan.id)
    taken = await store.next_task_for_agent("smith")  # another process's claim, say
    assert taken.id == first.id
    monkeypatch.setattr(task_ops, "_pick", lambda conn, agent, plan_id: first.id)  # stale pick
    got = await store.next_task_for_agent("smith")
    assert got.id == second.id and got.status == "running"
    assert await store.next_task_for_agent("smith") is None


async def test_short_prefixes_and_file_or_folder_searches_stay_newest_first(store):
    a = await make_plan(store, "Ledger export", files=["src/a.py"])
    b = await make_plan(store, "Legacy import", files=["src/b/c.py"])
    c = await make_plan(store, "Router", files=["docs/x.md"])
    assert ids(await store.search_plans("l")) == [b.id, a.id]
    assert ids(await store.search_plans("le")) == [b.id, a.id]
    assert ids(await store.search_plans("led")) == [a.id]
    assert ids(await store.search_plans(file_path="src")) == [b.id, a.id]
    assert ids(await store.search_plans("leg", file_path="src")) == [b.id]
    assert ids(await store.search_plans(file_path="src/b/c.py", limit=1)) == [b.id]
    assert ids(await store.search_plans()) == [c.id, b.id, a.id]  # no filter: newest plans


async def test_a_broad_folder_walks_plans_newest_first_with_the_same_answers(store, monkeypatch):
    """A folder many plans touch is answered by walking plans by recency (bounded by the
    limit, not by how many plans touch it); the answers are the narrow plan's, archived
    plans included only when asked."""
    from ndomo.store import plan_ops

    plans = []
    for i in range(12):
        files = [f"src/m{i}.py", f"docs/d{i}.md"] if i % 3 else [f"lib/x{i}.py"]
        plans.append(await make_plan(store, f"Plan {i}", files=files))
    await store._exec(
        "UPDATE plans SET updated_at = '2030-01-01T00:00:00.000Z' WHERE id = ?", (plans[1].id,)
    )
    await store._exec(
        "UPDATE plans SET archived_at = '2030-01-01T00:00:00.000Z' WHERE id = ?", (plans[2].id,)
    )

    async def answers() -> list[list[str]]:
        return [
            ids(await store.search_plans(file_path=fp, include_archived=arch, limit=lim))
            for fp in ("src", "src/", "docs", "src/m4.py", "lib", "nothing")
            for arch in (False, True)
            for lim in (3, 50)
        ]

    narrow = await answers()
    monkeypatch.setattr(plan_ops, "BROAD_FILES", 1)  # every folder and file takes the walk
    broad = await answers()
    assert broad == narrow
    assert narrow[1][0] == plans[1].id  # the most recently updated first
    assert plans[2].id not in narrow[1] and plans[2].id in narrow[3]  # archived only when asked
    sql, _ = plan_ops.recent_under_sql("src", include_archived=False)
    steps = [
        r[3] for r in await store._all("EXPLAIN QUERY PLAN " + sql, ("src", "src/", "src0", 5))
    ]
    assert steps[0] == "SCAN plans USING INDEX idx_plans_recent", steps
    assert any("SEARCH plan_files USING COVERING INDEX" in s for s in steps), steps


async def test_the_store_connection_keeps_a_larger_page_cache(store):
    """A 100k-plan search reads more pages than SQLite's default 2 MiB cache keeps."""
    from ndomo.store.db import CACHE_KIB

    assert (await store._one("PRAGMA cache_size"))[0] == -CACHE_KIB
