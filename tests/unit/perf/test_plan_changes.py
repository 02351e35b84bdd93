"""Change detection without polling: updated_at moves on every write (v15 triggers), the
store's change feed and live count, the database watch, and plan diagnostics re-reading
only what moved — for every open plan, with no cap."""

from __future__ import annotations

import asyncio
import sqlite3
from datetime import timedelta
from types import SimpleNamespace

import pytest

from ndomo.app import App
from ndomo.lsp import plan_diagnostics as pd
from ndomo.store import watch as watch_mod
from ndomo.store.models import PlanCreate
from ndomo.store.store import PlanStore
from ndomo.store.watch import DbWatch


@pytest.fixture
async def store(tmp_path):
    s = await PlanStore.open(tmp_path / ".ndomo" / "ndomo.db", workspace=tmp_path)
    yield s
    await s.close()


async def _updated(store, pid):
    return (await store._one("SELECT updated_at FROM plans WHERE id = ?", (pid,)))[0]


async def _age(store, pid):
    await store._exec(
        "UPDATE plans SET updated_at = '2000-01-01T00:00:00.000Z' WHERE id = ?", (pid,)
    )


async def test_every_write_to_a_plan_or_its_tasks_moves_updated_at(store):
    plan = await store.create_plan(PlanCreate(title="Moves", overview="o"))
    batch = await store.create_tasks(plan.id, [{"description": "one", "files": ["a.py"]}])
    tid = batch.tasks[0].id
    writes = [
        lambda: store.update_task_status(tid, "done"),
        lambda: store._exec("UPDATE plan_tasks SET description = 'raw' WHERE id = ?", (tid,)),
        lambda: store._exec("INSERT INTO plan_tags(plan_id, tag) VALUES (?, 'x')", (plan.id,)),
        lambda: store._exec("DELETE FROM plan_files WHERE plan_id = ?", (plan.id,)),
        lambda: store._exec("UPDATE plans SET archived_at = 'now' WHERE id = ?", (plan.id,)),
    ]
    for write in writes:
        await _age(store, plan.id)
        await write()
        assert await _updated(store, plan.id) > "2000-01-01T00:00:00.000Z"


async def test_change_feed_sees_changes_and_deletions(store):
    a = await store.create_plan(PlanCreate(title="A", overview="o"))
    b = await store.create_plan(PlanCreate(title="B", overview="o"))
    await store.update_plan_status(b.id, "abandoned")
    live = {s.id: s.live for s in await store.plan_changes(None)}
    assert live == {a.id: True}
    await _age(store, a.id)
    since = "2001-01-01T00:00:00.000Z"
    assert {s.id: s.live for s in await store.plan_changes(since)} == {b.id: False}
    await store.delete_plan(b.id, confirm=True)
    assert [(s.id, s.live) for s in await store.plan_changes(since)] == [
        (b.id, False)
    ]  # logged as gone


async def test_own_commits_call_the_commit_listeners(store):
    seen = []
    store.commit_listeners.add(lambda: seen.append(1))
    plan = await store.create_plan(PlanCreate(title="L", overview="o"))
    n = len(seen)
    assert n >= 1
    await store.create_tasks(plan.id, [{"description": "x"}])
    assert len(seen) > n
    n = len(seen)
    await store.list_plans()  # a read commits nothing
    await store.get_plan(plan.id)
    assert len(seen) == n


async def _next(event: asyncio.Event) -> bool:
    try:
        await asyncio.wait_for(event.wait(), 10)
        return True
    except TimeoutError:
        return False


@pytest.mark.parametrize("inotify", [True, False])
async def test_watch_sees_another_connections_commit(store, monkeypatch, inotify):
    monkeypatch.setattr(watch_mod, "FALLBACK_POLL_S", 0.05)
    hit = asyncio.Event()
    w = DbWatch(store.db_path, hit.set)
    kind = w.start(inotify=inotify)
    try:
        if inotify and kind != "inotify":
            pytest.skip("inotify is not available here")
        assert kind == ("inotify" if inotify else "poll")
        other = sqlite3.connect(store.db_path)  # another process's connection, outside the store
        with other:
            other.execute("INSERT INTO sessions(id, created_at) VALUES ('other', 'now')")
        other.close()
        assert await _next(hit), "the commit was not seen"
        if inotify:  # and a write to an unrelated file in the same folder is not a change
            await asyncio.sleep(0.1)
            hit.clear()
            (store.db_path.parent / "notes.txt").write_text("x")
            await asyncio.sleep(0.2)
            assert not hit.is_set()
    finally:
        w.close()


class _Server:
    """What the feature uses of the language server: publishing, spawning, closing."""

    closing = False

    def __init__(self) -> None:
        self.published: dict[str, list] = {}
        self.sent = 0
        self.workspace = SimpleNamespace(text_documents={})  # no view open in an editor

    def text_document_publish_diagnostics(self, params) -> None:
        self.published[params.uri] = params.diagnostics
        self.sent += 1


async def _bulk(store, n: int, start: int = 0) -> None:
    rows = [
        (f"bulk{i:05d}", f"bulk-{i}", f"Bulk {i}", "o", "2001-01-01T00:00:00.000Z")
        for i in range(start, start + n)
    ]
    await store._write(
        lambda c: c.executemany(
            "INSERT INTO plans(id, slug, title, overview, status, created_at, updated_at)"
            " VALUES (?,?,?,?,'approved',?,?)",
            [r + (r[-1],) for r in rows],
        )
    )
    await store._write(
        lambda c: c.executemany(
            "INSERT INTO plan_tasks(plan_id, ord, description, files) VALUES (?, 1, 'do it', ?)",
            [(r[0], f'["src/f{i}.py"]') for i, r in enumerate(rows, start)],
        )
    )
    await store._exec(
        "UPDATE plans SET updated_at = '2001-01-01T00:00:00.000Z' WHERE id LIKE 'bulk%'"
    )


async def test_diagnostics_reread_only_moved_plans_and_cover_every_open_plan(tmp_path, monkeypatch):
    monkeypatch.setattr(pd, "SETTLE", timedelta(0))
    app = App(tmp_path)
    try:
        store = await app.store()
        await _bulk(store, 1050)  # more than the 1,000 the old refresh silently kept
        feat = pd.FolderPlans(_Server())
        await feat.refresh(app)
        assert len(feat.plans) == 1050 and feat.reread == 1050
        files = [u for u in feat.server.published if u.endswith(".py")]
        assert len(files) == 1050

        feat.reread = 0
        await feat.refresh(app)  # nothing changed: no plan read
        assert feat.reread == 0

        sent = feat.server.sent
        (task,) = (await store.get_plan("bulk00007")).tasks
        await store.update_task_status(task.id, "failed")
        await feat.refresh(app)
        assert feat.reread == 1
        uri = next(u for u in feat.server.published if u.endswith("/src/f7.py"))
        assert "[failed]" in feat.server.published[uri][0].message
        assert feat.server.sent - sent == 2  # the file and the plan's view, nothing else

        # a plan deleted by another process: its deletion is in the feed
        await store._exec("DELETE FROM plans WHERE id = 'bulk00003'")
        await feat.refresh(app)
        assert "bulk00003" not in feat.plans
        uri = next(u for u in feat.server.published if u.endswith("/src/f3.py"))
        assert feat.server.published[uri] == []
    finally:
        await app.aclose()


async def test_search_for_a_common_word_is_bounded_and_newest_first(store, monkeypatch):
    from ndomo.store import plan_ops

    monkeypatch.setattr(plan_ops, "COMMON_HITS", 3)
    made = [
        await store.create_plan(PlanCreate(title=f"Parser step {i}", overview="o"))
        for i in range(5)
    ]
    rare = await store.create_plan(PlanCreate(title="Lexer", overview="o"))
    await _age(store, made[4].id)  # the newest-created match, updated long ago: ranked last
    found = [p.id for p in await store.search_plans("parser")]
    assert found == [
        made[3].id,
        made[2].id,
        made[4].id,
    ]  # the 3 newest-created matches, by updated_at
    assert [p.id for p in await store.search_plans("lexer")] == [
        rare.id
    ]  # a rare word: all its hits
    assert len(await store.search_plans("parser", file_path="")) == 3


async def test_turn_start_and_finish_are_one_hop_each(store, monkeypatch):
    """Both are on every turn's path (start: before its first token): one trip to the store's thread."""
    from ndomo.store.errors import NotFound

    hops = []
    real = store._db.call

    async def counting(fn, *args, **kwargs):
        hops.append(fn)
        return await real(fn, *args, **kwargs)

    monkeypatch.setattr(store._db, "call", counting)
    turn = await store.start_turn("s-one-hop", "craftsman", "autopilot", "hi")
    assert len(hops) == 1 and turn.status == "running" and turn.session_id == "s-one-hop"
    hops.clear()
    done = await store.finish_turn(turn.id, "done", tokens_in=3)
    assert len(hops) == 1 and done.status == "done" and done.finished_at and done.tokens_in == 3
    with pytest.raises(NotFound):
        await store.finish_turn(999_999, "done")
    with pytest.raises(NotFound):
        await store.start_turn(
            "s-one-hop", "craftsman", "autopilot", "child", parent_turn_id=999_999
        )
    assert [t.id for t in await store.list_turns("s-one-hop")] == [
        turn.id
    ]  # the failed child left nothing


def test_a_process_that_leaves_the_store_open_still_exits(tmp_path):
    """An editor's `exit` can end the event loop before the store is closed: the process
    must end anyway (an idle store thread must not block interpreter exit)."""
    import subprocess
    import sys

    code = (
        "import asyncio, pathlib, sys\n"
        "from ndomo.store.store import PlanStore\n"
        "async def main():\n"
        f"    s = await PlanStore.open(pathlib.Path({str(tmp_path / 'x.db')!r}), workspace=pathlib.Path('.'))\n"
        "    await s.list_plans()\n"
        "    return s  # never closed\n"
        "keep = asyncio.run(main())\n"
        "print('left open')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "left open" in out.stdout, out.stderr


async def test_an_open_view_that_refused_an_update_is_written_again(tmp_path, monkeypatch):
    """Nothing in the store changes again after a refused view edit: the refresh must retry."""
    import ndomo.lsp.host as owned

    monkeypatch.setattr(pd, "SETTLE", timedelta(0))
    answers = [False, True]
    written: list[str] = []

    async def flaky(server, path, text):
        written.append(text)
        return answers.pop(0) if answers else True

    monkeypatch.setattr(owned, "write_owned", flaky)
    app = App(tmp_path)
    try:
        store = await app.store()
        await _bulk(store, 1)
        feat = pd.FolderPlans(_Server())
        pokes: list[int] = []
        feat.poke = lambda: pokes.append(1)  # type: ignore[method-assign]
        monkeypatch.setattr(pd, "VIEW_RETRY_S", 0)
        await feat.refresh(app)  # the view refused: a retry is asked for
        await asyncio.sleep(0.01)
        assert pokes == [1] and len(written) == 1
        await feat.refresh(app)  # the retry writes it again, though nothing moved in the store
        assert len(written) == 2 and feat.reread == 2
        await feat.refresh(app)  # shown now: settled, no more reads
        assert len(written) == 2
    finally:
        await app.aclose()
