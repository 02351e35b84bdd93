"""Control files (issue 14): agents never write .git/ or .ndomo/ on their own; agent files,
the config and the project instructions are always asked about, with a warning; discussion's
design artifacts are judged on the real path of a file; a broken path declaration fails closed."""

from __future__ import annotations

import os

import pytest
from pydantic import BaseModel, ConfigDict

from ndomo.runtime.context import TurnRequest
from ndomo.runtime.host import BaseHost
from ndomo.runtime.tools import tool
from ndomo.security.control import control_kind, design_artifact

from .conftest import call, runtime_with, tool_messages, write_agent


class Host(BaseHost):
    def __init__(self, answer="once"):
        super().__init__()
        self.answer = answer
        self.asked = []

    async def approve(self, request):
        self.asked.append(request)
        return self.answer


async def _run(app, fake, calls, *, agent="craftsman", mode="autopilot", host=None, extra=()):
    for c in calls:
        fake.push(c)
    fake.push({"text": "ok"})
    rt = runtime_with(app, *extra)
    host = host or Host()
    await rt.run(TurnRequest(prompt="go", agent=agent, mode=mode), host)
    requests = fake.chat_requests()
    results = [tool_messages(r)[-1]["content"] for r in requests[1:]]
    return results, host


# -- the classification ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rel", "kind"),
    [
        ("AGENTS.md", "instructions"),
        ("CLAUDE.md", "instructions"),
        (".ndomo/instructions.md", "instructions"),
        (".ndomo/agents/craftsman.md", "agent_config"),
        (".ndomo/config.yaml", "agent_config"),
        (".ndomo/plans/fix.md", "plan_view"),
        (".ndomo/ndomo.db", "denied"),
        (".ndomo/agents/sub/x.md", "denied"),
        (".git/config", "denied"),
        (".git/hooks/pre-commit", "denied"),
        ("sub/.git/config", "denied"),
        ("docs/AGENTS.md", None),
        ("src/app.py", None),
    ],
)
def test_control_kind(rel, kind):
    assert control_kind(rel) == kind


@pytest.mark.parametrize(
    ("rel", "globs", "expected"),
    [
        ("docs/api.md", ["**/*.md", "docs/**"], True),
        ("README.md", ["**/*.md"], True),
        ("docs/diagram.txt", ["**/*.md", "docs/**"], True),
        ("docs/sub/x.py", ["docs/"], True),
        ("tools.md/evil.py", ["**/*.md", "docs/**"], False),
        ("notes.md/conftest.py", ["**/*.md"], False),
        ("a/b.md/c/d.py", ["*.md"], False),
        (".ndomo/agents/craftsman.md", ["**/*.md", ".ndomo/**"], False),
        (".ndomo/config.yaml", ["**"], False),
        (".git/config", ["**"], False),
        ("src/app.py", ["**/*.md", "docs/**"], False),
        ("docs/secret.md", ["docs/**", "!docs/secret.md"], False),
    ],
)
def test_design_artifact_is_a_file_match(rel, globs, expected):
    assert design_artifact(rel, globs) is expected


def test_default_design_globs_leave_out_ndomo():
    from ndomo.config import Settings

    assert not any(g.startswith(".ndomo") for g in Settings().modes.design_globs)


# -- the file tools ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "path", [".ndomo/ndomo.db", ".ndomo/x.txt", ".git/config", ".git/hooks/pre-commit"]
)
async def test_git_and_ndomo_are_denied_without_asking(app, fake, path):
    results, host = await _run(app, fake, [call("write", path=path, content="x")])
    assert "permission denied" in results[0] and "by hand" in results[0], results
    assert host.asked == []
    assert not (app.root / path).exists() or (app.root / path).read_text() != "x"


async def test_plan_views_change_only_through_plan_tools(app, fake):
    results, host = await _run(
        app, fake, [call("write", path=".ndomo/plans/fix.md", content="- [x] done\n")]
    )
    assert "permission denied" in results[0] and "plan tools" in results[0], results
    assert host.asked == [] and not (app.root / ".ndomo/plans/fix.md").exists()


@pytest.mark.parametrize(
    ("path", "grants"),
    [
        (".ndomo/agents/craftsman.md", "permissions"),
        (".ndomo/config.yaml", "API key"),
        ("AGENTS.md", "instruction"),
        ("CLAUDE.md", "instruction"),
        (".ndomo/instructions.md", "instruction"),
    ],
)
async def test_agent_files_config_and_instructions_always_ask_with_a_warning(
    app, fake, path, grants
):
    # the craftsman's write permission is `allow`: the control file asks anyway
    results, host = await _run(
        app,
        fake,
        [call("write", path=path, content="one\n"), call("write", path=path, content="two\n")],
        host=Host("project"),
    )
    assert [r.permission for r in host.asked] == ["control", "control"], (
        results
    )  # "always" saved nothing
    assert "WARNING" in host.asked[0].reason and grants in host.asked[0].reason
    assert "nothing is saved" in host.asked[0].reason
    assert (app.root / path).read_text() == "two\n"
    store = await app.store()
    assert await store.list_approvals() == []


async def test_control_file_ask_is_denied_without_a_user(app, fake):
    results, _ = await _run(
        app, fake, [call("write", path=".ndomo/agents/craftsman.md", content="x")], host=BaseHost()
    )
    assert "did not approve" in results[0]
    assert not (app.root / ".ndomo/agents/craftsman.md").exists()


async def test_discussion_may_ask_for_instructions_but_never_writes_ndomo(app, fake):
    host = Host("once")
    results, host = await _run(
        app,
        fake,
        [
            call("write", path="AGENTS.md", content="be nice\n"),
            call("write", path=".ndomo/notes.md", content="x\n"),
        ],
        agent="foreman",
        mode="discussion",
        host=host,
    )
    assert (app.root / "AGENTS.md").read_text() == "be nice\n" and host.asked[
        0
    ].permission == "control"
    assert "design artifacts" in results[1] and not (app.root / ".ndomo/notes.md").exists(), results


async def test_ndomo_is_never_a_design_artifact_whatever_the_config(app, fake):
    app.settings.modes.design_globs = ["**", ".ndomo/**"]
    results, _ = await _run(
        app,
        fake,
        [call("write", path=".ndomo/ndomo.db", content="x")],
        agent="foreman",
        mode="discussion",
    )
    assert "design artifacts" in results[0] and "never .ndomo/" in results[0], results


@pytest.mark.parametrize("path", ["tools.md/evil.py", "notes.md/conftest.py"])
async def test_a_folder_named_like_markdown_is_not_a_design_artifact(app, fake, path):
    results, _ = await _run(
        app,
        fake,
        [call("write", path=path, content="import os\n")],
        agent="foreman",
        mode="discussion",
    )
    assert "design artifacts" in results[0], results
    assert not (app.root / path).exists()


async def test_discussion_judges_the_symlink_target_the_write_would_change(app, fake):
    (app.root / "src").mkdir()
    (app.root / "src/app.py").write_text("x = 1\n")
    (app.root / "docs").mkdir()
    os.symlink("../src/app.py", app.root / "docs/api.md")
    results, _ = await _run(
        app,
        fake,
        [
            call("edit", path="docs/api.md", old_text="x = 1", new_text="x = 2"),
            call("write", path="docs/api.md", content="pwned\n"),
        ],
        agent="foreman",
        mode="discussion",
    )
    assert all("design artifacts" in r and "src/app.py" in r for r in results[:2]), results
    assert (app.root / "src/app.py").read_text() == "x = 1\n"


async def test_discussion_still_writes_real_design_artifacts(app, fake):
    results, _ = await _run(
        app,
        fake,
        [call("write", path="docs/guide.md", content="# g\n")],
        agent="foreman",
        mode="discussion",
    )
    assert (app.root / "docs/guide.md").read_text() == "# g\n", results


# -- a broken path declaration ----------------------------------------------------------


class BrokenParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str


def _broken(p):
    raise RuntimeError("bug in the tool")


@tool(
    "leaky",
    BrokenParams,
    description="reads a file (test tool)",
    permission="webfetch",
    read_paths=_broken,
)
async def leaky(ctx, p: BrokenParams):
    return (ctx.app.root / p.path).read_text()


async def test_a_broken_path_declaration_fails_closed(app, fake):
    (app.root / ".env").write_text("TOKEN=1\n")
    write_agent(
        app.root, "reader", "description: reads\nmode: primary\npermission:\n  webfetch: allow\n"
    )
    results, host = await _run(
        app, fake, [call("leaky", path=".env")], agent="reader", extra=(leaky,)
    )
    assert "permission denied" in results[0] and "could not say which files" in results[0], results
    assert "TOKEN" not in results[0] and host.asked == []


async def _broken_write_paths(ctx, p):
    raise RuntimeError("bug in the tool's paths")


async def _broken_changes(ctx, p):
    raise RuntimeError("bug in the tool")


@tool(
    "scribble",
    BrokenParams,
    description="writes a file (test tool)",
    risk="write",
    permission="edit",
    changes=_broken_write_paths,
)
async def scribble(ctx, p: BrokenParams):
    (ctx.app.root / p.path).write_text("written\n")
    return "wrote " + p.path


async def test_a_broken_write_path_declaration_is_refused_in_discussion_and_logged(
    app, fake, caplog
):
    """Discussion mode writes only design artifacts: a tool that cannot say which files it
    writes is refused (never let through), and the bug is logged with its traceback."""
    write_agent(
        app.root, "scribe", "description: writes\nmode: primary\npermission:\n  edit: allow\n"
    )
    with caplog.at_level("ERROR", logger="ndomo"):
        results, _ = await _run(
            app,
            fake,
            [call("scribble", path="docs/notes.md")],
            agent="scribe",
            mode="discussion",
            extra=(scribble,),
        )
    assert "cannot show which files it writes" in results[0], results
    assert not (app.root / "docs/notes.md").exists()
    assert any(
        "paths of tool scribble failed" in r.getMessage() and r.exc_info for r in caplog.records
    ), caplog.records


async def test_a_failing_secret_check_counts_the_file_as_secret(app, fake, monkeypatch):
    """The secret-file check itself breaking asks the user, as for a secret: never an allow."""
    import ndomo.security.paths as paths_mod

    def broken(*args, **kwargs):
        raise RuntimeError("bug in is_secret")

    monkeypatch.setattr(paths_mod, "is_secret", broken)
    (app.root / "notes.txt").write_text("plain\n")
    write_agent(
        app.root, "reader", "description: reads\nmode: primary\npermission:\n  webfetch: allow\n"
    )
    safe = tool(
        "peek",
        BrokenParams,
        description="reads a file (test tool)",
        permission="webfetch",
        read_paths=lambda p: [p.path],
    )(leaky.run)
    host = Host(answer="deny")
    results, host = await _run(
        app, fake, [call("peek", path="notes.txt")], agent="reader", host=host, extra=(safe,)
    )
    assert [r.permission for r in host.asked] == ["secret"], host.asked
    assert "plain" not in results[0], results


class WriteParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str
    content: str


@tool(
    "broken_writer",
    WriteParams,
    description="writes a file (test tool)",
    risk="write",
    permission="edit",
    changes=_broken_changes,
)
async def broken_writer(ctx, p: WriteParams):
    (ctx.app.root / p.path).write_text(p.content)
    return "written"


@pytest.mark.parametrize(("agent", "mode"), [("craftsman", "autopilot"), ("foreman", "discussion")])
async def test_a_broken_write_declaration_is_refused_by_every_guard(app, fake, agent, mode):
    """The scope guard (craftsman), the discussion contract: a write whose files are
    unknown is refused, never waved through as 'no files'."""
    results, _ = await _run(
        app,
        fake,
        [call("broken_writer", path="a.txt", content="x")],
        agent=agent,
        mode=mode,
        extra=(broken_writer,),
    )
    assert "could not say which files" in results[0] or "cannot show which files" in results[0]
    assert not (app.root / "a.txt").exists(), results
