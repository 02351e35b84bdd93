"""Tools state their effects, modes state their tools (issue 23).

A mode's contract names the tool classes (or single tools) it admits and the fence asks the
mode; a writing tool declares the file changes its arguments make, and the threshold scope
guard, the contracts and the policy read those changes, never the tool's argument names.
Both are shown with throwaway features defined here, with no edit to `tools/` or `agents/`.
"""

from __future__ import annotations

import ast
import dataclasses
import re
import typing
from pathlib import Path

import ndomo
from ndomo import compose
from ndomo.modes.base import AgentMode, ModeContract
from ndomo.runtime.context import SessionState, TurnContext, TurnRequest
from ndomo.runtime.edits import change_file
from ndomo.runtime.host import BaseHost
from ndomo.runtime.runtime import Runtime
from ndomo.runtime.tools import (
    BASE_KINDS,
    AllowAll,
    FileChange,
    Risk,
    ToolDescriptor,
    ToolError,
    ToolKind,
    tool,
)
from ndomo.schema import Schema

from .conftest import call, runtime_with, tool_messages, write_agent

SERVER = Path(ndomo.__file__).resolve().parent

# -- a throwaway mode admits `bash` by name ------------------------------------------------


class TryingMode(AgentMode):
    """Named nowhere in ndomo: it admits the base classes and the one tool `bash`."""

    name = "trying"
    contract = ModeContract(
        summary="Try one command out.", iteration_cap=3, tools=frozenset({"bash"})
    )


def _context(rt: Runtime, mode: str) -> TurnContext:
    return TurnContext(
        app=rt.app,
        runtime=rt,
        host=BaseHost(),
        request=TurnRequest(prompt="t"),
        session=SessionState(id="s", mode=mode, agent="craftsman"),
        mode=mode,
        agent_name="craftsman",
    )


async def test_a_throwaway_mode_admitting_bash_gets_it_without_editing_tools(app):
    plugins = compose.plugins()
    plugins.add_mode(TryingMode())
    plugins.tools.policy = AllowAll()  # the fence alone; the agents' permissions have their tests
    rt = Runtime(app, plugins)
    ctx = _context(rt, "trying")
    offered = {t.name for t in plugins.tools.filter(ctx)}
    assert "bash" in offered and {"read", "write", "edit", "plan_create"} <= offered
    # the other execute tool, the network tool and discussion's commit are not admitted
    assert not offered & {"serve", "web_fetch", "commit_plan"}, offered
    ran = await plugins.tools.execute(ctx, "bash", {"command": "printf made-in-trying"})
    assert ran.ok and "made-in-trying" in ran.content, ran.content
    refused = await plugins.tools.execute(ctx, "serve", {"action": "list"})
    assert refused.content == "tool 'serve' is not available in trying mode; switch to autopilot"
    # bash's fence message now names both modes that admit it, in registration order
    elsewhere = await plugins.tools.execute(_context(rt, "discussion"), "bash", {"command": "true"})
    assert elsewhere.content.endswith("switch to autopilot or trying"), elsewhere.content


def test_no_tool_names_a_mode():
    """Mode names appear nowhere in the tool features' code: tools state their class."""
    assert "modes" not in {f.name for f in dataclasses.fields(ToolDescriptor)}
    modes = set(compose.plugins().modes)
    sources = [*(SERVER / "tools").rglob("*.py"), SERVER / "plan" / "tools.py"]
    named = {
        (str(path.relative_to(SERVER)), text)
        for path in sources
        for text in _strings(path)
        if text in modes
    }
    assert named == set(), named


def test_every_tool_has_a_class_a_built_in_mode_admits():
    plugins = compose.plugins()
    kinds = set(typing.get_args(ToolKind))
    for t in plugins.tools.all():
        assert t.tool_kind in kinds, t.name
        assert any(m.contract.admits(t) for m in plugins.modes.values()), t.name
    assert kinds >= BASE_KINDS


# -- a throwaway writing tool counted by the scope guard -----------------------------------


class StampParams(Schema):
    files: list[str]
    lines: int


async def stamp_changes(ctx: TurnContext, p: StampParams) -> list[FileChange]:
    """Announces only names and a line count: no `path`, `content` or `patch` to guess from."""
    return [FileChange(name, "create", lines=p.lines) for name in p.files]


@tool(
    "stamp",
    StampParams,
    description="stamp files with numbered lines (test tool)",
    risk="write",
    permission="edit",
    changes=stamp_changes,
)
async def stamp(ctx: TurnContext, p: StampParams) -> str:
    for change in await stamp_changes(ctx, p):
        text = "".join(f"line {i}\n" for i in range(p.lines))
        outcome = await change_file(ctx, ctx.app.root / change.path, text)
        if not outcome.applied:
            raise ToolError(outcome.reason or "not written")
    return f"stamped {len(p.files)} files"


async def _turn(app, fake, calls, *, agent: str = "craftsman", summary: list | None = None):
    for c in calls:
        fake.push(c)
    fake.push({"text": "ok"})
    rt = runtime_with(app, stamp)
    done = await rt.run(TurnRequest(prompt="go", agent=agent, mode="autopilot"), BaseHost())
    if summary is not None:
        summary.append(done)
    return [tool_messages(r)[-1]["content"] for r in fake.chat_requests()[1:]]


async def test_a_throwaway_writing_tool_is_counted_through_its_declared_changes(app, fake):
    results = await _turn(
        app,
        fake,
        [
            call("stamp", files=["a.txt", "b.txt", "c.txt"], lines=1),  # file 3 in State 1
            call("stamp", files=["a.txt"], lines=51),  # 51 changed lines in State 1
            call("stamp", files=["a.txt"], lines=5),  # fits
        ],
    )
    assert "this would be file 3 of the turn" in results[0], results
    assert "51 changed lines" in results[1], results
    assert results[2] == "stamped 1 files", results
    assert sorted(p.name for p in app.root.glob("*.txt")) == ["a.txt"]


async def test_a_throwaway_writing_tool_past_the_limit_hands_back_to_the_planner(app, fake):
    summary: list = []
    await _turn(
        app, fake, [call("stamp", files=[f"f{i}.txt" for i in range(6)], lines=1)], summary=summary
    )
    (done,) = summary
    # the planner is found by its contract (`writes: design`), not by a name in the guard
    assert done.status == "blocked" and "more than my limit of 5" in done.handback, done
    assert "`/agent foreman`" in done.handback, done.handback
    assert not list(app.root.glob("f*.txt"))


async def test_the_threshold_applies_by_frontmatter_not_by_name(app, fake):
    write_agent(
        app.root,
        "jeweller",
        "description: tiny fixes\nmode: primary\nthreshold: {direct: 1, planned: 2, direct_lines: 3}\n"
        "permission:\n  edit: allow\n",
    )
    results = await _turn(
        app,
        fake,
        [call("stamp", files=["a.txt"], lines=4), call("stamp", files=["a.txt", "b.txt"], lines=1)],
        agent="jeweller",
    )
    assert "4 changed lines" in results[0] and "more than 3" in results[0], results
    assert "this would be file 2" in results[1], results


# -- CRLF: counted as `edit` changes it ----------------------------------------------------


async def test_an_edit_of_a_crlf_file_is_counted_by_the_scope_guard(app, fake):
    """The model writes LF; `edit` matches CRLF lines. The guard counts the lines the edit
    really changes (it once counted 0 here, the LF text not being in the file)."""
    write_agent(
        app.root,
        "tiny",
        "description: small fixes\nmode: primary\nthreshold: {direct: 2, planned: 5, direct_lines: 3}\n"
        "permission:\n  edit: allow\n",
    )
    crlf = "".join(f"x{i} = {i}\r\n" for i in range(10))
    (app.root / "w.py").write_bytes(crlf.encode())
    four_old = "x0 = 0\nx1 = 1\nx2 = 2\nx3 = 3\n"
    four_new = "y0 = 0\ny1 = 1\ny2 = 2\ny3 = 3\n"
    results = await _turn(
        app,
        fake,
        [
            call("edit", path="w.py", old_text=four_old, new_text=four_new),  # 4 lines: refused
            call("edit", path="w.py", old_text="x0 = 0\nx1 = 1\n", new_text="y0 = 0\ny1 = 1\n"),
        ],
        agent="tiny",
    )
    assert "4 changed lines" in results[0] and "more than 3" in results[0], results
    assert results[1].startswith("edited w.py at line 1"), results
    assert (app.root / "w.py").read_bytes().decode() == crlf.replace("x0 = 0", "y0 = 0").replace(
        "x1 = 1", "y1 = 1"
    )


async def test_edit_and_write_apply_the_changes_they_declare(app, fake):
    """One function per tool: what the guards were shown is what the tool writes."""
    from ndomo.tools.files.write import EditParams, WriteParams, edit_changes, write_changes

    (app.root / "c.txt").write_bytes(b"one\r\ntwo\r\n")
    rt = runtime_with(app)
    ctx = _context(rt, "autopilot")
    (edit_change,) = await edit_changes(
        ctx, EditParams(path="c.txt", old_text="two\n", new_text="2\n")
    )
    assert (edit_change.path, edit_change.kind, edit_change.after) == (
        "c.txt",
        "modify",
        "one\r\n2\r\n",
    )
    assert edit_change.changed_lines() == 1
    (write_change,) = await write_changes(ctx, WriteParams(path="./d/n.txt", content="n\n"))
    assert (write_change.path, write_change.kind, write_change.before) == (
        "d/n.txt",
        "create",
        None,
    )
    assert await write_changes(ctx, WriteParams(path="c.txt", content="one\r\ntwo\r\n")) == []


async def test_apply_patch_declares_a_move_as_one_change(app, fake):
    from ndomo.tools.files.apply_patch import ApplyPatchParams, patch_changes

    (app.root / "old.txt").write_text("a\nb\n")
    patch = "--- a/old.txt\n+++ b/new.txt\n@@ -1,2 +1,2 @@\n a\n-b\n+B\n"
    rt = runtime_with(app)
    (change,) = await patch_changes(_context(rt, "autopilot"), ApplyPatchParams(patch=patch))
    assert (change.kind, change.path, change.to, change.after) == (
        "move",
        "old.txt",
        "new.txt",
        "a\nB\n",
    )
    assert change.paths == ["old.txt", "new.txt"] and change.changed_lines() == 1


# -- guards name no tool and no agent; one threshold model ---------------------------------


def _strings(path: Path, only: str | None = None) -> list[str]:
    """The string constants of a module (or of its class `only`), docstrings left out
    (f-string parts included)."""
    tree: ast.AST = ast.parse(path.read_text(encoding="utf-8"))
    if only is not None:
        tree = next(n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == only)
    docs = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs
    ]


def test_guards_name_no_tool_and_no_agent():
    from ndomo.agents.loader import builtin_agents_dir
    from ndomo.agents.schema import AgentPermission

    plugins = compose.plugins()
    # words that are also the permission, risk and class vocabulary are not tool names here
    vocabulary = (
        set(AgentPermission.model_fields)
        | set(typing.get_args(Risk))
        | set(typing.get_args(ToolKind))
    )
    tools = {t.name for t in plugins.tools.all()} - vocabulary
    agents = {p.stem for p in builtin_agents_dir().glob("*.md")}
    guards = [
        (SERVER / "agents" / "scope.py", None),
        (SERVER / "agents" / "contract.py", None),
        (SERVER / "modes" / "discussion" / "mode.py", "DesignArtifactsOnly"),  # not its prompt
    ]
    named = {
        (path.name, word)
        for path, only in guards
        for text in _strings(path, only)
        for word in re.findall(r"[\w-]+", text)
        if word in tools or word in agents
    }
    assert named == set(), named
    for path in (SERVER / "plan" / "tools.py", SERVER / "plan" / "commit.py"):
        assert 'getattr(ctx.agent, "role"' not in path.read_text(encoding="utf-8"), path


def test_one_threshold_model_for_the_settings_and_the_frontmatter():
    from ndomo.agents import schema
    from ndomo.agents.scope import Threshold as used_by_scope
    from ndomo.config import Settings, Threshold

    assert schema.Threshold is Threshold and used_by_scope is Threshold
    assert Settings.model_fields["threshold"].annotation is Threshold
    assert Threshold in typing.get_args(
        schema.AgentFrontmatter.model_fields["threshold"].annotation
    )
    assert isinstance(Settings().threshold, Threshold)
