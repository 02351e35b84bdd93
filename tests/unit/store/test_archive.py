from __future__ import annotations

import datetime as dt

import pytest

from .conftest import make_plan, to_status


async def _finished(store):
    plan = await make_plan(
        store,
        "Ship search",
        overview="Full text search.",
        approach="Use FTS5.",
        files=["src/search.py"],
        tags=["search"],
        created_by_agent="foreman",
    )
    await store.create_tasks(
        plan.id,
        [
            {"description": "Build index", "agent": "smith", "files": ["src/idx.py"]},
            {"description": "Wire UI", "agent": "smith"},
        ],
    )
    await to_status(store, plan.id, "approved", "executing")
    t1, t2 = await store.list_tasks(plan.id)
    await store.update_task_status(t1.id, "done", result="index built: 42 docs")
    await store.update_task_status(t2.id, "failed", error="UI crashed")
    return plan


async def test_terminal_plan_is_archived_with_everything(store, tmp_path):
    plan = await _finished(store)
    change = await store.update_plan_status(plan.id, "failed", actor="craftsman", reason="UI broke")
    date = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d")
    assert change.archive_path == f".ndomo/archives/plans/ship-search-{date}.md"
    detail = await store.get_plan(plan.id)
    assert detail.archived_at and detail.archive_path == change.archive_path
    text = (tmp_path / change.archive_path).read_text()
    for needle in (
        "# Ship search",
        "Full text search.",
        "Use FTS5.",
        "- [x] 1. Build index",
        "index built: 42 docs",
        "- [!] 2. Wire UI",
        "UI crashed",
        "`src/search.py` (input)",
        "`src/idx.py` (modified)",
        "search",
        "executing → failed",
        "UI broke",
        "## Original plan data",
        '"title": "Ship search"',
    ):
        assert needle in text, needle


async def test_failed_db_write_removes_archive_file(store, tmp_path, monkeypatch):
    plan = await _finished(store)

    async def broken(plan_id, rel):
        raise RuntimeError("disk I/O error")

    monkeypatch.setattr(store, "_mark_archived", broken)
    change = await store.update_plan_status(plan.id, "failed", actor="x")
    assert (
        change.applied and change.archive_path is None and "archive not written" in change.message
    )
    archive_dir = tmp_path / ".ndomo" / "archives" / "plans"
    assert list(archive_dir.glob("*.md")) == []
    assert list(archive_dir.iterdir()) == []  # no temp file left either
    assert (await store.get_plan(plan.id)).archived_at is None
    monkeypatch.undo()
    assert await store.archive_pending() == [
        f".ndomo/archives/plans/ship-search-{dt.datetime.now(dt.UTC):%Y-%m-%d}.md"
    ]
    assert (await store.get_plan(plan.id)).archived_at is not None


async def test_archive_does_not_clobber_another_plans_file(store, tmp_path):
    a = await make_plan(store, "Same")
    await store.update_plan_status(a.id, "abandoned")
    await store.approve_plan((b := await make_plan(store, "Other")).id)
    # Deleting and re-creating would reuse the slug; simulate with a rename of b.
    await store.delete_plan(a.id, True)
    await store._exec("UPDATE plans SET slug = 'same' WHERE id = ?", (b.id,))
    change = await store.update_plan_status(b.id, "abandoned")
    assert change.archive_path.endswith("-2.md")
    assert len(list((tmp_path / ".ndomo/archives/plans").glob("same-*.md"))) == 2


async def test_archive_refuses_unfinished_plan(store):
    from ndomo.store.errors import Refused

    plan = await make_plan(store)
    with pytest.raises(Refused):
        await store.archive_plan(plan.id)
