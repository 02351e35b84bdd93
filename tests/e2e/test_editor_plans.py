"""Plan diagnostics, the plan's markdown view and its quick fixes, seen from an editor."""

from __future__ import annotations

import asyncio
import subprocess
import sys

from lsprotocol import types
from pygls.uris import from_fs_path

from tests.e2e.conftest import command
from tests.e2e.editor_support import code_actions, seed_plan, wait_for

INFO, HINT, WARN = (
    types.DiagnosticSeverity.Information,
    types.DiagnosticSeverity.Hint,
    types.DiagnosticSeverity.Warning,
)


def _severity(client, uri: str, task_id: int):
    for d in client.diagnostics.get(uri, []):
        if d.code == task_id:
            return d.severity
    return None


async def test_plan_diagnostics_follow_tasks_other_processes_the_view_and_archive(lsp, tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "parser.py").write_text("def parse():\n    pass\n", encoding="utf-8")
    client = await lsp.start(tmp_path)
    slug, (t1, t2) = await seed_plan(
        tmp_path,
        [
            {"description": "Split the tokenizer", "files": ["src/parser.py"]},
            {"description": "Add tests", "files": ["src/parser.py", "tests/test_parser.py"]},
        ],
    )
    src = from_fs_path(str(tmp_path / "src" / "parser.py"))
    unopened = from_fs_path(str(tmp_path / "tests" / "test_parser.py"))
    view_path = tmp_path / ".ndomo" / "plans" / f"{slug}.md"
    view = from_fs_path(str(view_path))

    # a plan made by another connection shows up (seen through the database watch), on files open or not;
    # each file's diagnostics are their own notification, so the test waits for all three
    await wait_for(
        lambda: (
            len(client.diagnostics.get(src, [])) == 2
            and len(client.diagnostics.get(unopened, [])) == 1
            and len(client.diagnostics.get(view, [])) == 2
        ),
        what="diagnostics for the new plan on its source, an unopened file and its view",
    )
    d1 = next(d for d in client.diagnostics[src] if d.code == t1)
    assert d1.source == "ndomo" and d1.severity == INFO and d1.range.start.line == 0
    assert d1.message == f"plan {slug} · task 1/2 [pending] Split the tokenizer"
    assert [d.code for d in client.diagnostics[unopened]] == [t2]
    # the markdown view: one line per task, one diagnostic on each task line
    text = view_path.read_text(encoding="utf-8")
    lines = text.splitlines()
    view_lines = {d.code: d.range.start.line for d in client.diagnostics[view]}
    assert lines[view_lines[t1]].startswith("- [ ] 1. Split the tokenizer [pending]")
    assert "files: src/parser.py" in lines[view_lines[t1]]

    # a change made in this server: severity moves at once
    await command(client, "ndomo.task.status", {"id": t1, "status": "done"})
    await wait_for(lambda: _severity(client, src, t1) == HINT, what="done → hint")
    await wait_for(lambda: "- [x] 1." in view_path.read_text(encoding="utf-8"), what="view ticked")

    # a change made by a separate `ndomo task status` process (inotify; generous wait under load)
    out = await asyncio.to_thread(
        subprocess.run,
        [
            sys.executable,
            "-m",
            "ndomo",
            "task",
            "status",
            "--id",
            str(t2),
            "--status",
            "failed",
            "--workspace",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    await wait_for(
        lambda: _severity(client, src, t2) == WARN, timeout=30, what="other process → warning"
    )

    # unticking task 1 and ticking task 2 in the view, then saving, updates both tasks
    edited = (
        view_path.read_text(encoding="utf-8")
        .replace("- [x] 1.", "- [ ] 1.")
        .replace("- [ ] 2.", "- [x] 2.")
    )
    view_path.write_text(edited, encoding="utf-8")
    client.text_document_did_save(
        types.DidSaveTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=view), text=edited
        )
    )
    await wait_for(
        lambda: _severity(client, src, t1) == INFO and _severity(client, src, t2) == HINT,
        what="view save → task statuses",
    )
    tasks = {t["id"]: t["status"] for t in await command(client, "ndomo.task.list", {"plan": slug})}
    assert tasks == {t1: "pending", t2: "done"}

    # quick fixes on a task diagnostic
    diag = next(d for d in client.diagnostics[src] if d.code == t1)
    actions = await code_actions(
        client,
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=src),
            range=diag.range,
            context=types.CodeActionContext(diagnostics=[diag]),
        ),
    )
    fixes = {
        a.title: a
        for a in actions
        if isinstance(a, types.CodeAction) and a.kind == types.CodeActionKind.QuickFix
    }
    run_t1, done_t1 = (
        "ndomo: Run task 1 (Split the tokenizer) with craftsman",
        "ndomo: Mark task 1 (Split the tokenizer) done",
    )
    assert set(fixes) == {run_t1, done_t1, f"ndomo: Open plan {slug}"}
    run = fixes[run_t1].command
    assert run.command == "ndomo.turn"
    assert run.arguments[0]["agent"] == "craftsman" and run.arguments[0]["mode"] == "autopilot"
    assert (
        run.arguments[0]["task_id"] == str(t1)
        and "Split the tokenizer" in run.arguments[0]["prompt"]
    )
    assert fixes[run_t1].diagnostics[0].code == t1
    done = fixes[done_t1].command
    await command(client, done.command, done.arguments[0])
    await wait_for(lambda: _severity(client, src, t1) == HINT, what="quick fix marked done")
    opened = fixes[f"ndomo: Open plan {slug}"].command
    result = await command(client, opened.command, opened.arguments[0])
    assert result == {"path": f".ndomo/plans/{slug}.md", "shown": True}
    assert client.shown_documents[-1].uri == view

    # finishing the plan archives it: every diagnostic it made is cleared
    await command(client, "ndomo.plan.status", {"id": slug, "status": "abandoned"})
    await wait_for(
        lambda: (
            not client.diagnostics.get(src)
            and not client.diagnostics.get(unopened)
            and not client.diagnostics.get(view)
        ),
        what="archived plan clears its diagnostics",
    )


def _plan(status) -> dict | None:
    plan = status.get("plan") if isinstance(status, dict) else getattr(status, "plan", None)
    if plan is not None and not isinstance(plan, dict):
        plan = plan._asdict() if hasattr(plan, "_asdict") else vars(plan)
    return plan


async def test_status_follows_plan_progress_of_the_session(lsp, tmp_path):
    seen: list = []
    client = await lsp.start(
        tmp_path, handlers={"ndomo/status": lambda params: seen.append(params)}
    )
    status = await command(client, "ndomo.status", {})
    slug, (t1,) = await seed_plan(tmp_path, [{"description": "One step", "files": ["a.py"]}])
    # commit the plan to the editor's session through the store, as the foreman would
    from ndomo.store.store import PlanStore

    store = await PlanStore.open(tmp_path / ".ndomo" / "ndomo.db", workspace=tmp_path)
    try:
        plan = await store.get_plan(slug)
        await store.update_session(status["session"], committed_plan_id=plan.id)
    finally:
        await store.close()
    await wait_for(
        lambda: any(_plan(s) and _plan(s)["done"] == 0 for s in seen),
        what=f"plan in status: {status} {seen}",
    )
    await command(client, "ndomo.task.status", {"id": t1, "status": "done"})
    await wait_for(
        lambda: any(_plan(s) and (_plan(s)["done"], _plan(s)["total"]) == (1, 1) for s in seen),
        what="status after progress",
    )


async def test_two_tasks_on_one_line_get_distinct_quick_fix_titles(lsp, tmp_path):
    (tmp_path / "app.py").write_text("x = 1\n", encoding="utf-8")
    client = await lsp.start(tmp_path)
    slug, (t1, t2) = await seed_plan(
        tmp_path,
        [
            {"description": "Rename x", "files": ["app.py"]},
            {"description": "Document x", "files": ["app.py"]},
        ],
    )
    src = from_fs_path(str(tmp_path / "app.py"))
    await wait_for(
        lambda: len(client.diagnostics.get(src, [])) == 2, what="two task diagnostics on one line"
    )
    diags = client.diagnostics[src]
    assert diags[0].range == diags[1].range
    actions = await code_actions(
        client,
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=src),
            range=diags[0].range,
            context=types.CodeActionContext(diagnostics=diags),
        ),
    )
    titles = [
        a.title
        for a in actions
        if isinstance(a, types.CodeAction) and a.kind == types.CodeActionKind.QuickFix
    ]
    assert len(titles) == len(set(titles)) == 5, titles
    assert "ndomo: Run task 1 (Rename x) with craftsman" in titles
    assert "ndomo: Mark task 2 (Document x) done" in titles
