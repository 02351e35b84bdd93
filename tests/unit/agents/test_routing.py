"""Routing: extension table, stack override, painter rule, multi-stack split, store router."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, Field

from ndomo.agents.routing import make_router, route_agent, split_by_stack


class TaskCreate(BaseModel):
    """Stand-in with the store's TaskCreate fields (duck-typed by the router)."""

    description: str
    agent: str | None = None
    files: list[str] = Field(default_factory=list)
    complexity: int | None = None
    dependencies: list[int] = Field(default_factory=list)
    metadata: dict = Field(default_factory=dict)


@pytest.mark.parametrize(
    "path, agent",
    [
        ("cmd/main.go", "go-smith"),
        ("web/App.vue", "vue-smith"),
        ("src/Button.svelte", "vue-smith"),
        ("src/a.ts", "js-smith"),
        ("src/a.tsx", "js-smith"),
        ("src/a.js", "js-smith"),
        ("src/a.jsx", "js-smith"),
        ("server/app.py", "python-smith"),
        ("src/lib.rs", "rust-smith"),
        ("src/main.zig", "zig-smith"),
        ("README.md", "smith"),
        ("Makefile", "smith"),
        ("config.yaml", "smith"),
        ("SRC\\WIN\\Main.PY", "python-smith"),
    ],
)
def test_extension_table(path, agent):
    assert route_agent([path]) == agent


def test_no_files_goes_to_smith():
    assert route_agent([]) == "smith"
    assert route_agent(None, None) == "smith"


def test_unknown_files_do_not_outvote_a_stack():
    assert route_agent(["main.go", "go.mod", "README.md", "Makefile"]) == "go-smith"


def test_majority_then_first_seen():
    assert route_agent(["a.py", "b.ts", "c.ts"]) == "js-smith"
    assert route_agent(["a.py", "b.ts"]) == "python-smith"


@pytest.mark.parametrize(
    "stack, agent",
    [
        ("go", "go-smith"),
        ("golang", "go-smith"),
        ("vue", "vue-smith"),
        ("svelte", "vue-smith"),
        ("js", "js-smith"),
        ("ts", "js-smith"),
        ("TypeScript", "js-smith"),
        ("python", "python-smith"),
        ("rust", "rust-smith"),
        ("zig", "zig-smith"),
        ("generic", "smith"),
    ],
)
def test_stack_overrides_extension(stack, agent):
    assert (
        route_agent(["thing.py"] if agent != "python-smith" else ["thing.go"], {"stack": stack})
        == agent
    )


def test_unknown_stack_falls_back_to_files():
    assert route_agent(["a.rs"], {"stack": "cobol"}) == "rust-smith"
    assert route_agent(["a.rs"], {"stack": 3}) == "rust-smith"


def test_painter_only_via_craftsman_for_vue_design():
    design = {"stack": "vue", "type": "design"}
    assert route_agent(["App.vue"], design, role="builder") == "painter"
    assert route_agent(["App.vue"], design, role="planner") == "vue-smith"
    assert route_agent(["App.vue"], design) == "vue-smith"
    assert (
        route_agent(["App.vue"], {"stack": "vue", "type": "logic"}, role="builder") == "vue-smith"
    )
    assert route_agent(["App.vue"], {"type": "design"}, role="builder") == "vue-smith"
    assert (
        route_agent(["a.tsx"], {"stack": "react", "type": "design"}, role="builder") == "js-smith"
    )


def test_single_stack_task_is_left_as_is():
    task = {
        "description": "fix",
        "files": ["a.py", "b.py", "README.md"],
        "agent": None,
        "metadata": {},
    }
    assert split_by_stack(task) == [task]


def test_stack_override_prevents_split():
    task = {
        "description": "fix",
        "files": ["a.py", "b.go"],
        "agent": None,
        "metadata": {"stack": "go"},
    }
    assert split_by_stack(task) == [task]


def test_multi_stack_dict_task_is_split_per_stack():
    task = {
        "description": "add field",
        "files": ["api/h.go", "web/F.vue", "docs/x.md", "api/h_test.go", "web/f.ts"],
        "agent": None,
        "metadata": {"type": "feature"},
    }
    parts = split_by_stack(task)
    assert [p["description"] for p in parts] == [
        "add field (go)",
        "add field (vue)",
        "add field (js)",
    ]
    assert [p["files"] for p in parts] == [
        ["api/h.go", "api/h_test.go", "docs/x.md"],
        ["web/F.vue"],
        ["web/f.ts"],
    ]
    assert [p["metadata"] for p in parts] == [
        {"type": "feature", "stack": "go"},
        {"type": "feature", "stack": "vue"},
        {"type": "feature", "stack": "js"},
    ]
    assert all(p["agent"] is None for p in parts)
    assert task["files"] == [
        "api/h.go",
        "web/F.vue",
        "docs/x.md",
        "api/h_test.go",
        "web/f.ts",
    ]  # untouched


def test_split_reroutes_router_agents_but_keeps_explicit_ones():
    routed = split_by_stack(
        {"description": "d", "files": ["a.py", "b.rs"], "agent": "python-smith", "metadata": None}
    )
    assert [p["agent"] for p in routed] == ["python-smith", "rust-smith"]
    kept = split_by_stack(
        {"description": "d", "files": ["a.py", "b.rs"], "agent": "craftsman", "metadata": None}
    )
    assert [p["agent"] for p in kept] == ["craftsman", "craftsman"]


def test_router_on_pydantic_tasks():
    router = make_router("builder")
    task = TaskCreate(
        description="ship it",
        files=["svc/main.go", "ui/App.vue"],
        complexity=3,
        dependencies=[1],
        metadata={"type": "design"},
    )
    parts = router(task)
    assert all(isinstance(p, TaskCreate) for p in parts)
    assert [(p.description, p.agent) for p in parts] == [
        ("ship it (go)", "go-smith"),
        ("ship it (vue)", "painter"),
    ]
    assert all(p.complexity == 3 and p.dependencies == [1] for p in parts)
    assert task.agent is None and task.description == "ship it"


def test_router_routes_agentless_single_stack_and_keeps_given_agent():
    router = make_router("planner")
    assert [p.agent for p in router(TaskCreate(description="x", files=["a.rs"]))] == ["rust-smith"]
    assert [
        p.agent for p in router(TaskCreate(description="x", files=["a.rs"], agent="craftsman"))
    ] == ["craftsman"]
    assert [p.agent for p in router(TaskCreate(description="x"))] == ["smith"]
    design = TaskCreate(
        description="x", files=["A.vue"], metadata={"stack": "vue", "type": "design"}
    )
    assert [p.agent for p in router(design)] == ["vue-smith"]  # painter is craftsman-only
