from __future__ import annotations

import pytest

from ndomo.store.errors import Invalid, NotFound
from ndomo.store.store import PlanStore

from .conftest import make_plan


async def test_sessions_created_on_demand_everywhere(store):
    s = await store.ensure_session(None)
    assert s.id and s.ended_at is None
    assert (await store.ensure_session("editor-1")).id == "editor-1"
    # operations naming a session nobody started just work
    plan = await make_plan(store, session_id="never-started", tasks=1)
    assert plan.session_id == "never-started"
    await store.start_turn("other-unknown", "foreman", "discussion", "hi")
    await store.save_approval("bash", "npm test*", "allow", session_id="third")
    await store.update_session("fourth", mode="autopilot", committed_plan_id=plan.id)
    got = await store.get_session("fourth")
    assert (got.mode, got.committed_plan_id) == ("autopilot", plan.id)
    assert {x.id for x in await store.list_sessions()} >= {
        "editor-1",
        "never-started",
        "other-unknown",
        "third",
        "fourth",
    }
    with pytest.raises(NotFound):
        await store.get_session("ghost")
    with pytest.raises(Invalid):
        await store.ensure_session("  ")


async def test_latest_session(store):
    assert await store.latest_session() is None
    await store.ensure_session("a")
    await store.update_session("b", mode="autopilot", agent="craftsman", title="T")
    latest = await store.latest_session()
    assert (latest.id, latest.mode, latest.agent, latest.title) == (
        "b",
        "autopilot",
        "craftsman",
        "T",
    )


async def test_turns_and_edits(store):
    t1 = await store.start_turn("s", "craftsman", "autopilot", "do it")
    assert t1.status == "running"
    child = await store.start_turn("s", "python-smith", "autopilot", "sub", parent_turn_id=t1.id)
    await store.add_turn_edit(t1.id, "a.py", None, "new")
    await store.add_turn_edit(t1.id, "b.py", "old", None)
    edits = await store.turn_edits(t1.id)
    assert [(e.seq, e.path, e.before, e.after) for e in edits] == [
        (1, "a.py", None, "new"),
        (2, "b.py", "old", None),
    ]
    done = await store.finish_turn(t1.id, "done", tokens_in=10, tokens_out=5)
    assert done.finished_at and (done.tokens_in, done.tokens_out) == (10, 5)
    with pytest.raises(Invalid):
        await store.finish_turn(t1.id, "exploded")
    assert await store.mark_interrupted_turns() == 0  # our own process is alive: nothing to mark
    assert await store.mark_interrupted_turns(alive=lambda pid: False) == 1
    assert (await store.get_turn(child.id)).status == "interrupted"
    assert [t.id for t in await store.list_turns("s")] == [t1.id, child.id]
    with pytest.raises(NotFound):
        await store.start_turn("s", "x", "y", "z", parent_turn_id=999)


async def test_approvals_deny_beats_allow(store):
    await store.save_approval("bash", "npm *", "allow", scope="project")
    await store.save_approval("bash", "npm publish*", "deny", session_id="s")
    assert await store.find_approval("bash", "npm test", "s") == "allow"
    assert await store.find_approval("bash", "npm publish --tag x", "s") == "deny"
    assert (
        await store.find_approval("bash", "npm publish", "other") == "allow"
    )  # deny was session-only
    assert await store.find_approval("bash", "rm -rf /", "s") is None
    assert await store.find_approval("edit", "npm test", "s") is None
    listed = await store.list_approvals("s")
    assert len(listed) == 2
    await store.revoke_approval(listed[1].id)
    assert await store.find_approval("bash", "npm publish", "s") == "allow"
    with pytest.raises(NotFound):
        await store.revoke_approval(listed[1].id)
    with pytest.raises(Invalid):
        await store.save_approval("bash", "x", "maybe", scope="project")
    with pytest.raises(Invalid):
        await store.save_approval("bash", "x", "allow")  # session scope without a session


async def test_memories_merge_near_duplicates(store):
    m1 = await store.remember("s", "fact", "The API uses JWT tokens.")
    m2 = await store.remember("s", "fact", "the api uses   JWT tokens")
    assert m2.merged and m2.id == m1.id and m2.hits == 1
    m3 = await store.remember("s", "fact", "The API uses JWT token.")
    assert m3.merged and m3.id == m1.id
    other_cat = await store.remember(None, "decision", "The API uses JWT tokens.")
    assert not other_cat.merged and other_cat.id != m1.id
    distinct = await store.remember("s", "fact", "Tests run with pytest")
    assert not distinct.merged
    assert len(await store.list_memories()) == 3
    found = await store.search_memories("jwt")
    assert {m.id for m in found} == {m1.id, other_cat.id}
    assert await store.search_memories("???") == []
    with pytest.raises(Invalid):
        await store.remember("s", "gossip", "x")


async def test_change_stamp_sees_every_connections_commits(store, tmp_path, monkeypatch):
    import ndomo.store.store as store_mod

    monkeypatch.setattr(store_mod, "STAMP_SETTLE_NS", 0)  # trust the stamp at once
    v0 = store.change_stamp()
    await store.list_plans()  # reading commits nothing
    assert store.change_stamp() == v0
    other = await PlanStore.open(store.db_path, workspace=tmp_path)
    try:
        await make_plan(other, "From elsewhere")
    finally:
        await other.close()
    v1 = store.change_stamp()
    assert v1 != v0
    await make_plan(store, "From here")
    assert store.change_stamp() != v1
    assert await store.ping() is True


async def test_change_stamp_is_withheld_while_the_files_just_changed(store):
    await make_plan(store, "Just now")
    assert store.change_stamp() is None  # mtime is coarse: a later write could look the same


async def test_wal_and_pragmas(store):
    assert (await store._one("PRAGMA journal_mode"))[0] == "wal"
    assert (await store._one("PRAGMA foreign_keys"))[0] == 1
    assert (await store._one("PRAGMA busy_timeout"))[0] >= 5000


async def test_write_waits_for_a_lock_held_by_another_process(store):
    """With busy_timeout off, only the BEGIN IMMEDIATE retry lets the write through."""
    import sqlite3
    import threading

    await store._exec("PRAGMA busy_timeout = 0")
    other = sqlite3.connect(store.db_path, check_same_thread=False, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    timer = threading.Timer(0.3, other.execute, ("COMMIT",))
    timer.start()
    try:
        plan = await make_plan(store, "Written after the lock")
    finally:
        timer.join()
        other.close()
    assert (await store.get_plan(plan.id)).title == "Written after the lock"


async def test_bad_input_is_invalid_and_writes_nothing(store):
    with pytest.raises(Invalid, match="slug"):
        await store.create_plan({"title": "x", "overview": "o", "slug": "Not A Slug"})
    with pytest.raises(Invalid, match="overview"):
        await store.create_plan({"title": "x"})
    plan = await make_plan(store)
    with pytest.raises(Invalid, match=r"tasks\.1\.description"):
        await store.create_tasks(plan.id, [{"description": "ok"}, {"description": ""}])
    with pytest.raises(Invalid):
        await store.create_tasks(plan.id, "not a list")
    with pytest.raises(Invalid):
        await store.get_plan(None)
    assert len(await store.list_plans()) == 1 and await store.list_tasks(plan.id) == []
