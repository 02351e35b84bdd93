""" "Always" proposes a scoped rule (`pytest *`) the user may edit; a saved rule admits a
command the way `bash` rules do (every simple command of the line), never a denied one."""

from __future__ import annotations

import io
import shutil

import pytest

from ndomo.agents.policy import AgentPolicy
from ndomo.app import App
from ndomo.runtime.events import Notice
from ndomo.runtime.host import Approval, ApprovalRequest
from ndomo.security.shell_rules import has_wildcard, scoped_rule
from tests.unit.security.test_auto_allow import Recorder, _craftsman
from tests.unit.security.test_sandbox_real import _ctx, ws_app  # noqa: F401 - a fixture

needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None,
    reason="SKIPPED LOUDLY: bubblewrap (bwrap) is not installed; `apt-get install bubblewrap` (.ci/run does)",
)


@pytest.mark.parametrize(
    ("commands", "rule"),
    [
        (["pytest tests/test_a.py -q"], "pytest *"),
        (["git commit -m wip"], "git commit *"),
        (["npm install left-pad"], "npm install *"),
        (["python3 -m pytest -q"], "python3 -m pytest *"),
        (["python3 calc.py 3"], "python3 calc.py *"),
        (["python3 -c print(1)"], None),  # the code is the command
        (["rm build/old.py"], None),  # every rm is its own decision
        (["curl https://x"], None),
        (["sh -c ls"], None),
        (["pytest a", "curl b"], None),  # a line of two commands: saved as it is
        (["git --no-pager log"], "git *"),
        (["make"], "make *"),
        (["ls *.py"], "ls *"),
        (["cat a[1].txt"], "cat *"),
    ],
)
def test_the_rule_always_proposes(commands, rule) -> None:
    assert scoped_rule(commands) == rule


def test_exact_subjects_are_not_wildcards() -> None:
    assert (
        not has_wildcard("echo [*]") and not has_wildcard("ls [?]x") and not has_wildcard("pytest")
    )
    assert has_wildcard("pytest *") and has_wildcard("ls a?")


class Editor(Recorder):
    """A user who answers Always, with the rule edited to `rule` (None: kept)."""

    def __init__(self, rule: str | None = None) -> None:
        super().__init__("project")
        self.rule = rule

    async def approve(self, request: ApprovalRequest):
        self.asked.append(request)
        return Approval(choice="project", rule=self.rule) if self.rule else "project"


@needs_bwrap
async def test_always_saves_the_scoped_rule_and_it_admits_the_next_commands_only(
    ws_app: App,  # noqa: F811 - the fixture
) -> None:
    ws = ws_app.root
    (ws / "tests").mkdir()
    (ws / "tests" / "test_a.py").write_text("def test_a():\n    pass\n")
    (ws / ".env").write_text("TOKEN=x\n")
    host = Editor()
    ctx = await _ctx(ws_app, policy=AgentPolicy(), host=host, agent=_craftsman())
    run = ctx.runtime.plugins.tools.execute
    first = await run(ctx, "bash", {"command": "python3 -m unittest discover -s tests"})
    assert first.status != "refused"
    assert [a.rule for a in host.asked] == ["python3 -m unittest *"]
    assert "Always saves the rule `python3 -m unittest *`" in host.asked[0].text()
    store = await ws_app.store()
    assert [(a.pattern, a.action) for a in await store.list_approvals()] == [
        ("python3 -m unittest *", "allow")
    ]
    # the next unittest runs unasked; a line that adds another command, a secret argument and
    # another program are still asked
    asked = Recorder("deny")
    ctx2 = await _ctx(ws_app, policy=AgentPolicy(), host=asked, agent=_craftsman())
    run2 = ctx2.runtime.plugins.tools.execute
    again = await run2(ctx2, "bash", {"command": "python3 -m unittest -v tests.test_a"})
    assert again.status != "refused" and asked.asked == []
    for command in (
        "python3 -m unittest x && curl http://example.com",
        "python3 -m unittest .env",
        "python3 -m pip list",
    ):
        result = await run2(ctx2, "bash", {"command": command})
        assert result.status == "refused", command
    assert [a.subject for a in asked.asked] == [
        "python3 -m unittest x && curl http://example.com",
        "python3 -m unittest .env",
        "python3 -m pip list",
    ]


@needs_bwrap
async def test_a_saved_rule_never_admits_what_the_agent_denies(
    ws_app: App,  # noqa: F811 - the fixture
) -> None:
    host = Editor(rule="git push *")
    ctx = await _ctx(ws_app, policy=AgentPolicy(), host=host, agent=_craftsman())
    run = ctx.runtime.plugins.tools.execute
    await run(ctx, "bash", {"command": "git push origin main"})  # asked; Always `git push *`
    assert [a.rule for a in host.asked] == ["git push *"]
    store = await ws_app.store()
    assert [a.pattern for a in await store.list_approvals()] == ["git push *"]
    forced = await run(ctx, "bash", {"command": "git push --force origin main"})
    assert forced.status == "refused" and "permission denied" in forced.content
    assert len(host.asked) == 1  # refused by the craftsman's deny rule, not asked


@needs_bwrap
async def test_an_edited_rule_that_does_not_cover_the_command_is_not_saved(
    ws_app: App,  # noqa: F811 - the fixture
) -> None:
    host = Editor(rule="npm test *")
    ctx = await _ctx(ws_app, policy=AgentPolicy(), host=host, agent=_craftsman())
    result = await ctx.runtime.plugins.tools.execute(ctx, "bash", {"command": "make lint"})
    assert result.status != "refused"  # allowed once
    store = await ws_app.store()
    assert await store.list_approvals() == []
    notices = [e.message for e in host.events if isinstance(e, Notice)]
    assert notices == ["the rule `npm test *` does not cover `make lint`: not saved; allowed once"]


async def test_the_terminal_shows_the_rule_to_edit() -> None:
    from ndomo.terminal.host import TerminalHost

    host = TerminalHost(interactive=True, out=io.StringIO())
    answers = iter(["p", "pytest tests/*"])
    shown: list[str] = []

    async def prompt(text: str) -> str:
        shown.append(text)
        return next(answers)

    host._prompt = prompt  # type: ignore[method-assign]
    req = ApprovalRequest(
        permission="bash",
        subject="pytest tests/a.py",
        agent="craftsman",
        mode="autopilot",
        rule="pytest *",
    )
    assert await host.approve(req) == Approval(choice="project", rule="pytest tests/*")
    assert shown[1] == "  save the rule [pytest *]: "
    answers = iter(["p", ""])  # Enter keeps the proposal
    assert await host.approve(req) == Approval(choice="project", rule="pytest *")


@needs_bwrap
async def test_session_saves_the_scoped_rule_for_this_session_only(
    ws_app: App,  # noqa: F811 - the fixture
) -> None:
    host = Recorder("session")
    ctx = await _ctx(ws_app, policy=AgentPolicy(), host=host, agent=_craftsman())
    await ctx.runtime.plugins.tools.execute(ctx, "bash", {"command": "make lint"})
    store = await ws_app.store()
    saved = await store.list_approvals(ctx.session.id)
    assert [(a.pattern, a.scope) for a in saved] == [("make lint *", "session")]
    again = await ctx.runtime.plugins.tools.execute(ctx, "bash", {"command": "make lint -k"})
    assert again.status != "refused" and len(host.asked) == 1
