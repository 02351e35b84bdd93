"""The pure halves of the editor surface: plan view render/parse, undo over BaseHost."""

from __future__ import annotations

import pytest

from ndomo.app import App
from ndomo.features.undo import UndoRefused, undo_last_turn
from ndomo.plan.view import render, task_lines, wanted_changes, write_view
from ndomo.runtime.host import BaseHost
from ndomo.store.models import PlanCreate, TaskCreate


@pytest.fixture
async def app(tmp_path):
    a = App(tmp_path)
    yield a
    await a.aclose()


async def _plan(app):
    store = await app.store()
    plan = await store.create_plan(PlanCreate(title="Fix it", overview="o"))
    await store.create_tasks(
        plan.id,
        [TaskCreate(description="first\nstep", files=["a.py"]), TaskCreate(description="second")],
    )
    return store, await store.get_plan(plan.id)


async def test_view_round_trip_ticks_and_unticks(app):
    store, plan = await _plan(app)
    t1, t2 = plan.tasks
    text, where = render(plan)
    lines = text.splitlines()
    assert lines[where[t1.id]] == f"- [ ] 1. first step [pending] · files: a.py · #{t1.id}"
    assert task_lines(text) == {t1.id: (where[t1.id], False), t2.id: (where[t2.id], False)}
    assert wanted_changes(plan, text) == []
    ticked = text.replace("- [ ] 2.", "- [x] 2.")
    assert wanted_changes(plan, ticked) == [(t2.id, "done")]
    await store.update_task_status(t2.id, "done")
    plan = await store.get_plan(plan.id)
    assert wanted_changes(plan, text) == [(t2.id, "pending")]  # unticked in an older text
    path, _, written = await write_view(app.root, plan)
    assert written and "- [x] 2. second [done]" in path.read_text(encoding="utf-8")
    assert (await write_view(app.root, plan))[2] is False  # unchanged: not rewritten


async def test_undo_restores_refuses_changed_files_and_moves_back(app):
    store = await app.store()
    f = app.root / "a.txt"
    f.write_text("one", encoding="utf-8")
    for text_before, text_after in (("one", "two"), ("two", "three")):
        turn = await store.start_turn("s1", "craftsman", "autopilot", "p")
        await store.add_turn_edit(turn.id, "a.txt", text_before, text_after)
        await store.finish_turn(turn.id, "done")
    f.write_text("three", encoding="utf-8")
    host = BaseHost()
    res = await undo_last_turn(app, host, "s1")
    assert res.restored == ["a.txt"] and f.read_text(encoding="utf-8") == "two"
    f.write_text("edited by hand", encoding="utf-8")
    with pytest.raises(UndoRefused) as err:
        await undo_last_turn(app, host, "s1")
    assert err.value.files == ["a.txt"] and f.read_text(encoding="utf-8") == "edited by hand"
    res = await undo_last_turn(app, host, "s1", force=True)
    assert f.read_text(encoding="utf-8") == "one"
    assert (await undo_last_turn(app, host, "s1")).turn_id is None


async def test_undo_of_a_created_file_deletes_it(app):
    store = await app.store()
    turn = await store.start_turn("s2", "craftsman", "autopilot", "p")
    (app.root / "new.txt").write_text("hi", encoding="utf-8")
    await store.add_turn_edit(turn.id, "new.txt", None, "hi")
    res = await undo_last_turn(app, BaseHost(), "s2")
    assert res.restored == ["new.txt"] and not (app.root / "new.txt").exists()
