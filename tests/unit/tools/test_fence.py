"""The mode fence for every tool of this area, and discussion's design-artifact rule."""

from __future__ import annotations

import pytest

MODES = ("discussion", "brainstorming", "autopilot")
EVERYWHERE = [
    "read",
    "glob",
    "grep",
    "write",
    "edit",
    "apply_patch",
    "file_map",
    "outline_file",
    "find_symbol",
    "find_references",
    "plan_create",
    "plan_get",
    "plan_list",
    "plan_search",
    "plan_update_status",
    "plan_delete",
    "task_create_batch",
    "task_list",
    "task_update_status",
    "task_next_for_agent",
]
TABLE = {name: set(MODES) for name in EVERYWHERE} | {"commit_plan": {"discussion"}}


def test_registered_with_the_public_contract(plugins):
    for name in TABLE:
        assert plugins.tools.get(name) is not None, name

    def schema(n):
        return set(plugins.tools.get(n).schema()["properties"])

    assert schema("read") == {"path", "start_line", "end_line"}
    assert schema("write") == {"path", "content"}
    assert schema("edit") == {"path", "old_text", "new_text"}
    assert schema("apply_patch") == {"patch"}
    assert schema("glob") == {"pattern"}
    assert schema("grep") == {"pattern", "path", "glob"}
    assert schema("file_map") == {"path", "depth"}
    assert schema("outline_file") == {"path"}
    assert schema("find_symbol") == {"name"}  # `kind` is accepted, not offered (request size)
    assert set(plugins.tools.get("find_symbol").params.model_fields) == {"name", "kind"}
    assert schema("find_references") == {"name"}
    assert schema("commit_plan") == {"title", "steps", "markdown"}
    for name in ("write", "edit", "apply_patch"):
        t = plugins.tools.get(name)
        assert t.risk == "write" and callable(t.paths)
    assert plugins.tools.get("write").permission == "write"
    assert (
        plugins.tools.get("edit").permission
        == plugins.tools.get("apply_patch").permission
        == "edit"
    )
    for name in TABLE:
        if name.startswith(("plan_", "task_")) or name == "commit_plan":
            t = plugins.tools.get(name)
            assert t.risk == "plan" and t.permission == "plan_db", name


@pytest.mark.parametrize("mode", MODES)
async def test_offered_per_mode(mode, make_ctx, plugins):
    ctx = await make_ctx(mode, turn=False)
    offered = {t.name for t in plugins.tools.filter(ctx)}
    for name, modes in TABLE.items():
        assert (name in offered) == (mode in modes), (name, mode)


@pytest.mark.parametrize("mode", MODES)
async def test_refused_when_called_outside_its_modes(mode, make_ctx, call):
    ctx = await make_ctx(mode, turn=False)
    for name, modes in TABLE.items():
        res = await call(ctx, name, {})
        if mode in modes:
            assert "is not available in" not in res.content, (name, mode)
        else:
            assert res.status == "refused" and f"is not available in {mode} mode" in res.content


async def test_discussion_writes_only_design_artifacts(ws, make_ctx, call):
    (ws / "src").mkdir()
    (ws / "src/x.py").write_text("x = 1\n")
    ctx = await make_ctx("discussion")
    refused = [
        ("write", {"path": "src/x.py", "content": "x = 2\n"}),
        ("write", {"path": "docs/../src/x.py", "content": "x = 2\n"}),
        ("edit", {"path": "src/x.py", "old_text": "x = 1", "new_text": "x = 2"}),
        ("apply_patch", {"patch": "--- a/src/x.py\n+++ b/src/x.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"}),
        (
            "apply_patch",
            {
                "patch": "--- /dev/null\n+++ b/docs/a.md\n@@ -0,0 +1 @@\n+a\n"
                "--- a/src/x.py\n+++ b/src/x.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
            },
        ),
    ]
    for name, args in refused:
        res = await call(ctx, name, args)
        assert (
            res.status == "refused"
            and "design artifacts" in res.content
            and "src/x.py" in res.content
        ), (name, res)
    assert (ws / "src/x.py").read_text() == "x = 1\n" and not (ws / "docs/a.md").exists()
    allowed = [
        ("write", {"path": "docs/x.md", "content": "# x\n"}),
        ("write", {"path": "docs/diagram.txt", "content": "x\n"}),
        ("edit", {"path": "docs/x.md", "old_text": "# x", "new_text": "# y"}),
        ("apply_patch", {"patch": "--- /dev/null\n+++ b/notes/idea.md\n@@ -0,0 +1 @@\n+idea\n"}),
    ]
    for name, args in allowed:
        res = await call(ctx, name, args)
        assert res.ok, (name, res.content)
    assert (ws / "docs/x.md").read_text() == "# y\n" and (
        ws / "notes/idea.md"
    ).read_text() == "idea\n"


async def test_other_modes_write_code(ws, make_ctx, call):
    for mode in ("brainstorming", "autopilot"):
        ctx = await make_ctx(mode)
        res = await call(ctx, "write", {"path": f"src/{mode}.py", "content": "x = 1\n"})
        assert res.ok, res.content
