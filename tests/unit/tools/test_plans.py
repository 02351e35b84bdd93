"""Plan tools, commit_plan and plan-in-a-file against a real SQLite store."""

from __future__ import annotations

PLAN_MD = """# Auth rewrite

## Overview
Replace the session cookie with tokens.

## Steps
1. Parse tokens in `server/auth.py`
2. Send the token from `web/app.ts`
3. Document it in `docs/auth.md`
"""


def _plan_events(ctx):
    return [e for e in ctx.host.events if e.kind == "plan_changed"]


async def test_commit_plan_with_steps(app, make_ctx, call):
    ctx = await make_ctx("discussion", agent="foreman")
    res = await call(
        ctx,
        "commit_plan",
        {
            "title": "Add login",
            "steps": [
                {
                    "description": "Token parser",
                    "files": ["server/auth.py"],
                    "complexity": 2,
                    "risk": "low",
                },
                {"description": "Login form", "files": ["web/login.ts"]},
            ],
        },
    )
    assert res.ok, res.content
    assert res.content.startswith("committed plan add-login with 2 tasks (status draft)")
    assert "1. Token parser → python-smith [server/auth.py]" in res.content
    assert "2. Login form → js-smith" in res.content
    store = await app.store()
    plan = await store.get_plan("add-login")
    assert plan.created_by_agent == "foreman" and plan.session_id == ctx.session.id
    assert [t.description for t in plan.tasks] == ["Token parser", "Login form"]
    assert plan.tasks[0].complexity == 2 and plan.tasks[0].metadata["risk"] == "low"
    assert ctx.session.committed_plan_id == plan.id
    assert (await store.get_session(ctx.session.id)).committed_plan_id == plan.id
    assert [e.plan_id for e in _plan_events(ctx)] == [plan.id]


async def test_commit_plan_from_markdown_and_bad_input(app, make_ctx, call):
    ctx = await make_ctx("discussion")
    res = await call(ctx, "commit_plan", {"title": "Auth", "markdown": PLAN_MD})
    assert res.ok and "with 3 tasks" in res.content and "docs/auth.md" in res.content
    res = await call(ctx, "commit_plan", {"title": "Nothing"})
    assert not res.ok and "give steps" in res.content
    res = await call(ctx, "commit_plan", {"title": "Prose", "markdown": "Just some words."})
    assert not res.ok and "no steps found" in res.content


async def test_commit_plan_is_fenced_to_discussion(app, make_ctx, call):
    for mode in ("autopilot", "brainstorming"):
        ctx = await make_ctx(mode)
        res = await call(ctx, "commit_plan", {"title": "x", "steps": [{"description": "y"}]})
        assert res.status == "refused"
        assert (
            res.content
            == f"tool 'commit_plan' is not available in {mode} mode; switch to discussion"
        )
    store = await app.store()
    assert await store.list_plans() == []


async def test_plan_in_a_file_is_committed_and_disclosed(ws, app, make_ctx, call):
    ctx = await make_ctx("discussion", agent="foreman")
    res = await call(ctx, "write", {"path": "docs/plan.md", "content": PLAN_MD})
    assert res.ok, res.content
    assert res.content.startswith("created docs/plan.md")
    assert "also committed as plan auth-rewrite with 3 tasks" in res.content
    store = await app.store()
    plan = await store.get_plan("auth-rewrite")
    assert plan.metadata == {"source_file": "docs/plan.md"} and len(plan.tasks) == 3
    assert ctx.session.committed_plan_id == plan.id
    # the same steps again (a ticked checkbox, a typo fixed elsewhere): no new plan
    res = await call(ctx, "write", {"path": "docs/plan.md", "content": PLAN_MD + "\nSome notes.\n"})
    assert "unchanged" in res.content
    assert len(await store.list_plans()) == 1
    # different steps while still a draft: the old draft is replaced, not piled up
    res = await call(
        ctx,
        "edit",
        {
            "path": "docs/plan.md",
            "old_text": "3. Document it in `docs/auth.md`",
            "new_text": "3. Document it in `docs/auth.md`\n4. Announce it",
        },
    )
    assert "also committed as plan auth-rewrite-2 with 4 tasks" in res.content
    assert "replacing draft auth-rewrite" in res.content
    active = await store.list_plans()
    assert [p.slug for p in active] == ["auth-rewrite-2"]
    assert (await store.get_plan("auth-rewrite")).status == "abandoned"


async def test_plan_file_of_running_plan_gets_new_steps_appended(app, make_ctx, call):
    ctx = await make_ctx("autopilot")
    await call(ctx, "write", {"path": "sprint.md", "content": "- [ ] one\n- [ ] two\n"})
    store = await app.store()
    plan = (await store.list_plans())[0]
    await store.update_plan_status(plan.id, "approved")
    res = await call(
        ctx, "write", {"path": "sprint.md", "content": "- [x] one\n- [ ] two\n- [ ] three\n"}
    )
    assert "also updated plan" in res.content and "3. three" in res.content
    assert [t.description for t in await store.list_tasks(plan.id)] == ["one", "two", "three"]
    assert len(await store.list_plans()) == 1


async def test_non_plan_markdown_and_one_step_plans_are_just_files(ws, app, make_ctx, call):
    ctx = await make_ctx("discussion")
    for path, content in (
        ("docs/notes.md", PLAN_MD),  # plan-shaped, but not named like a plan
        ("docs/explanation.md", PLAN_MD),  # 'plan' inside a word does not count
        ("roadmap.md", "# Roadmap\n\n1. only one step\n"),
        ("plan.txt", PLAN_MD),  # not markdown
    ):
        res = (
            await call(ctx, "write", {"path": path, "content": content})
            if path.endswith(".md")
            else None
        )
        if res is None:
            ctx2 = await make_ctx("autopilot")
            res = await call(ctx2, "write", {"path": path, "content": content})
        assert res.ok and "committed" not in res.content, (path, res.content)
    assert await (await app.store()).list_plans() == []


async def test_plan_in_a_file_through_apply_patch(app, make_ctx, call):
    ctx = await make_ctx("discussion")
    patch = (
        "--- /dev/null\n+++ b/ROADMAP.md\n@@ -0,0 +1,3 @@\n+# Q3\n+## Ship search\n+## Ship sync\n"
    )
    res = await call(ctx, "apply_patch", {"patch": patch})
    assert res.ok and "also committed as plan q3 with 2 tasks" in res.content


async def test_plan_and_task_tools(app, make_ctx, call):
    ctx = await make_ctx("autopilot", agent="craftsman")
    res = await call(
        ctx, "plan_create", {"title": "Search", "overview": "Add search", "tags": ["search"]}
    )
    assert res.ok and res.content.startswith("created search [draft] Search")
    tasks = [{"description": f"step {i}", "files": [f"pkg/m{i}.py"]} for i in range(1, 7)]
    tasks[1]["dependencies"] = [1]
    res = await call(ctx, "task_create_batch", {"plan_id": "search", "tasks": tasks})
    assert res.ok and "added 6 tasks to search" in res.content
    assert "warning: plan search has 6 tasks (>5)" in res.content
    assert "→ python-smith" in res.content
    res = await call(ctx, "task_list", {"plan_id": "search"})
    assert len(res.content.splitlines()) == 6
    res = await call(ctx, "plan_get", {"id": "search"})
    assert "progress: 0/6 done" in res.content and "tags: search" in res.content
    res = await call(ctx, "task_next_for_agent", {"agent": "python-smith", "peek": True})
    assert res.content.startswith("next: ") and "step 1" in res.content
    res = await call(ctx, "task_next_for_agent", {"agent": "python-smith"})
    assert res.content.startswith("claimed: ") and "[running] step 1" in res.content
    task_id = int(res.content.split("#")[1].split()[0])
    res = await call(ctx, "task_update_status", {"id": task_id, "status": "done", "result": "ok"})
    assert res.ok and "[done] step 1" in res.content
    store = await app.store()
    plan = await store.get_plan("search")
    assert plan.status == "executing" and plan.created_by_agent == "craftsman"
    res = await call(ctx, "plan_search", {"query": "search"})
    assert res.content.startswith("search [executing]")
    res = await call(ctx, "plan_list", {"status": "draft"})
    assert res.content == "no plans"
    res = await call(ctx, "plan_update_status", {"id": "search", "status": "completed"})
    assert not res.ok and "pending or running" in res.content
    res = await call(ctx, "task_update_status", {"id": 9999, "status": "done"})
    assert not res.ok and "no task with id 9999" in res.content
    assert len(_plan_events(ctx)) >= 4


async def test_plan_delete_needs_a_real_true(app, make_ctx, call):
    ctx = await make_ctx()
    await call(ctx, "plan_create", {"title": "Old", "overview": "x"})
    res = await call(ctx, "plan_delete", {"id": "old", "confirm": "true"})
    assert not res.ok and "confirm" in res.content
    res = await call(ctx, "plan_delete", {"id": "old"})
    assert not res.ok and "confirm: true" in res.content
    res = await call(ctx, "plan_delete", {"id": "old", "confirm": True})
    assert not res.ok and "cannot delete draft plan old" in res.content
    assert (await call(ctx, "plan_update_status", {"id": "old", "status": "abandoned"})).ok
    res = await call(ctx, "plan_delete", {"id": "old", "confirm": True})
    assert res.ok and res.content == "deleted plan old and its 0 tasks"


async def test_a_failing_write_listener_becomes_a_note_and_the_others_still_speak(
    ws, plugins, make_ctx, call
):
    async def broken(ctx, rel, text):
        raise ValueError("index offline")

    async def later(ctx, rel, text):
        return f"(note: {rel} seen)"

    plugins.on_file_written.add(broken)
    plugins.on_file_written.add(later)
    ctx = await make_ctx("autopilot")
    res = await call(ctx, "write", {"path": "a.txt", "content": "x\n"})
    assert res.ok, res.content
    assert (ws / "a.txt").read_text() == "x\n"
    assert res.content.splitlines() == [
        "created a.txt (1 lines)",
        "(note: a.txt was written, but ValueError: index offline)",
        "(note: a.txt seen)",
    ]
