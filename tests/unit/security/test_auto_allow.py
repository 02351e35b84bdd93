"""`sandbox.auto_allow` run for real: bubblewrap around what the craftsman would ask about.

A command the craftsman's rules ask about runs without asking only when bubblewrap confines
it and it gets no network; it then cannot read the workspace's secret files. Denials (the
agent's and saved ones), a secret or computed argument, a control file and a request for
network are still refused or asked.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from ndomo.agents.loader import builtin_agents_dir, parse_agent_file
from ndomo.agents.policy import AgentPolicy
from ndomo.app import App
from ndomo.runtime.events import Decision, Notice
from ndomo.runtime.host import ApprovalRequest, BaseHost
from tests.unit.security.test_sandbox_real import Listener, _ctx, ws_app  # noqa: F401 - a fixture

pytestmark = pytest.mark.skipif(
    shutil.which("bwrap") is None,
    reason="SKIPPED LOUDLY: bubblewrap (bwrap) is not installed; `apt-get install bubblewrap` (.ci/run does)",
)

CANARY = "CANARY-d41d8cd9"


class Recorder(BaseHost):
    """A user who answers every approval with `answer`; keeps what was asked and shown."""

    def __init__(self, answer: str = "deny") -> None:
        super().__init__()
        self.answer = answer
        self.asked: list[ApprovalRequest] = []
        self.events: list = []

    async def approve(self, request: ApprovalRequest):
        self.asked.append(request)
        return self.answer

    async def emit(self, event) -> None:
        self.events.append(event)


def _craftsman():
    agent, problems = parse_agent_file(builtin_agents_dir() / "craftsman.md")
    assert agent is not None, problems
    return agent


PROBE = """
import pathlib, socket, sys
port = int(sys.argv[1])
pathlib.Path("made-by-probe.txt").write_text("ok")
for label, path in (("env", ".env"), ("key", "deploy/id_rsa.pem")):
    try:
        print(label + ":", repr(pathlib.Path(path).read_text()))
    except OSError as exc:
        print(label + ":", "unreadable", type(exc).__name__)
try:
    socket.create_connection(("127.0.0.1", port), timeout=2).close()
    print("net: reached")
except OSError as exc:
    print("net: blocked", type(exc).__name__)
"""


@pytest.fixture
def listener():
    lst = Listener()
    yield lst
    lst.close()


def _seed(ws: Path) -> None:
    (ws / ".env").write_text(f"TOKEN={CANARY}\n")
    (ws / "deploy").mkdir()
    (ws / "deploy" / "id_rsa.pem").write_text(f"-----BEGIN {CANARY}-----\n")
    (ws / "probe.py").write_text(PROBE)


async def test_an_asked_command_runs_unasked_sandboxed_offline_and_blind_to_secrets(
    ws_app: App,  # noqa: F811 - the fixture
    listener: Listener,
) -> None:
    ws = ws_app.root
    _seed(ws)
    command = f"{sys.executable} probe.py {listener.port}"
    # without auto_allow the craftsman asks (its `*` rule); the user says no: nothing ran
    host = Recorder("deny")
    ctx = await _ctx(ws_app, policy=AgentPolicy(), host=host, agent=_craftsman())
    run = ctx.runtime.plugins.tools.execute
    refused = await run(ctx, "bash", {"command": command})
    assert refused.status == "refused" and [a.subject for a in host.asked] == [command]
    assert not (ws / "made-by-probe.txt").exists()

    ws_app.settings.sandbox.auto_allow = True
    host = Recorder("deny")
    ctx = await _ctx(ws_app, policy=AgentPolicy(), host=host, agent=_craftsman())
    ran = await ctx.runtime.plugins.tools.execute(ctx, "bash", {"command": command})
    assert ran.ok, ran.content
    assert host.asked == []  # nobody was asked
    assert (ws / "made-by-probe.txt").read_text() == "ok"  # it ran, in the workspace
    assert ran.data["sandbox"] == "sandboxed (bubblewrap)" and ran.data["network"] is False
    assert "net: blocked" in ran.content and listener.hits == 0
    # /dev/null bound over each: empty, or refused where the device cannot be opened
    for label in ("env", "key"):
        assert f"{label}: ''" in ran.content or f"{label}: unreadable" in ran.content, ran.content
    assert CANARY not in ran.content
    assert (ws / ".env").read_text() == f"TOKEN={CANARY}\n"  # hidden, not changed
    # the call's decision line says why nothing was asked; no notice repeats it
    assert [e.text for e in host.events if isinstance(e, Decision)] == [
        "auto-allowed (sandboxed, offline)"
    ]
    assert not [e for e in host.events if isinstance(e, Notice)]


@pytest.mark.parametrize(
    ("command", "params", "expected"),
    [
        ("cat .env", {}, "asked"),  # names a secret file
        ("base64 deploy/id_rsa.pem", {}, "asked"),
        ("cat $HOME/notes.txt", {}, "asked"),  # computed at run time
        ('sh -c "$(printf cat) .env"', {}, "asked"),
        ("python3 probe.py 1", {"network": True}, "asked"),  # wants network: only the user gives it
        ("echo x > AGENTS.md", {}, "asked"),  # the agents' instructions
        ("git push --force origin main", {}, "denied"),  # the craftsman's deny rule
        ("echo x > .git/hooks/pre-commit", {}, "denied"),  # a control file
    ],
)
async def test_what_auto_allow_still_asks_or_refuses(
    ws_app: App,  # noqa: F811 - the fixture
    command: str,
    params: dict,
    expected: str,
) -> None:
    _seed(ws_app.root)
    ws_app.settings.sandbox.auto_allow = True
    host = Recorder("deny")
    ctx = await _ctx(ws_app, policy=AgentPolicy(), host=host, agent=_craftsman())
    result = await ctx.runtime.plugins.tools.execute(ctx, "bash", {"command": command, **params})
    assert result.status == "refused", result.content
    assert [a.subject for a in host.asked] == ([command] if expected == "asked" else [])


async def test_a_saved_denial_and_a_missing_sandbox_win_over_auto_allow(
    ws_app: App,  # noqa: F811 - the fixture
) -> None:
    ws = ws_app.root
    ws_app.settings.sandbox.auto_allow = True
    store = await ws_app.store()
    await store.save_approval("bash", "touch denied.txt", "deny", scope="project", session_id=None)
    host = Recorder("deny")
    ctx = await _ctx(ws_app, policy=AgentPolicy(), host=host, agent=_craftsman())
    run = ctx.runtime.plugins.tools.execute
    denied = await run(ctx, "bash", {"command": "touch denied.txt"})
    assert denied.status == "refused" and "saved rule" in denied.content and host.asked == []
    # no OS sandbox: auto_allow does not apply, the command is asked as before
    ws_app.settings.sandbox.mode = "off"
    asked = await run(ctx, "bash", {"command": "touch unsandboxed.txt"})
    assert asked.status == "refused" and [a.subject for a in host.asked] == [
        "touch unsandboxed.txt"
    ]
    assert not (ws / "denied.txt").exists() and not (ws / "unsandboxed.txt").exists()


# A craftsman session's 20 commands (tests, installs, git, file ops), each with the `network`
# the model asks for; two are ones the craftsman denies.
SESSION: list[tuple[str, bool]] = [
    ("python3 -m pytest -q", False),
    ("pytest tests/test_calc.py", False),
    ("python3 -m unittest discover -s tests", False),
    ("python3 calc.py", False),
    ("python3 -m compileall -q .", False),
    ("pip install --retries 0 --timeout 3 requests", True),
    ("npm install --fetch-retries=0 left-pad", True),
    ("pip install --retries 0 --timeout 3 -e .", True),
    ("git status --short", False),
    ("git diff", False),
    ("git add -A", False),
    ("git commit -qm wip", False),
    ("git checkout -q -b feature", False),
    ("git log --oneline", False),
    ("mkdir -p build", False),
    ("cp calc.py build/", False),
    ("mv build/calc.py build/old.py", False),
    ("rm build/old.py", False),
    ("git push --force origin main", False),
    ("npm publish", False),
]


async def _session_prompts(app: App) -> tuple[list[str], list[str]]:
    """(the commands the user was asked about, the ones refused without asking) in a run of
    SESSION where the user answers No (what runs unasked still runs, for real)."""
    host = Recorder("deny")
    ctx = await _ctx(app, policy=AgentPolicy(), host=host, agent=_craftsman())
    refused = []
    for command, network in SESSION:
        result = await ctx.runtime.plugins.tools.execute(
            ctx, "bash", {"command": command, **({"network": True} if network else {})}
        )
        if result.status == "refused":
            refused.append(command)
    asked = [a.subject for a in host.asked]
    return asked, [c for c in refused if c not in asked]


async def test_the_twenty_command_session_asks_three_times_with_auto_allow_and_none_with_destinations(
    ws_app: App,  # noqa: F811 - the fixture
) -> None:
    ws = ws_app.root
    (ws / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (ws / "tests").mkdir()
    (ws / "tests" / "test_calc.py").write_text(
        "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"
    )
    asked_before, refused_before = await _session_prompts(ws_app)
    ws_app.settings.sandbox.auto_allow = True
    asked_after, refused_after = await _session_prompts(ws_app)
    denied = ["git push --force origin main", "npm publish"]
    assert refused_before == refused_after == denied  # nothing denied before is allowed now
    # docs/workflows.md reports these counts: 9 of 20 asked before, 3 after, 0 with destinations
    assert asked_before == [
        "python3 -m unittest discover -s tests",
        "python3 calc.py",
        "python3 -m compileall -q .",
        *[c for c, network in SESSION if network],
        "git commit -qm wip",
        "git checkout -q -b feature",
        "rm build/old.py",
    ]
    installs = [c for c, network in SESSION if network]
    assert asked_after == installs
    # the installs' destinations in the user's config: each reaches its index only, unasked
    ws_app.settings.sandbox.destinations = {
        "pip install *": ["pypi.org", "files.pythonhosted.org"],
        "npm install *": ["registry.npmjs.org"],
    }
    asked_scoped, refused_scoped = await _session_prompts(ws_app)
    assert asked_scoped == [] and refused_scoped == denied


async def test_health_and_the_status_say_auto_allow_is_on(ws_app: App) -> None:  # noqa: F811
    from ndomo.features.health import HealthParams, health, render_health

    ws_app.settings.sandbox.mode = "auto"
    report = await health(ws_app, HealthParams(probe_model=False))
    assert report.sandbox.auto_allow is False and "auto_allow" not in render_health(
        report.model_dump()
    )
    ws_app.settings.sandbox.auto_allow = True
    report = await health(ws_app, HealthParams(probe_model=False))
    text = render_health(report.model_dump())
    assert report.sandbox.auto_allow is True
    assert "sandbox.auto_allow: on — commands the agent would ask about run without asking" in text
    ctx = await _ctx(ws_app)
    status = await ctx.runtime.status(ctx.session)
    assert status.auto_allow is True
    ws_app.settings.sandbox.mode = "off"
    text = render_health((await health(ws_app, HealthParams(probe_model=False))).model_dump())
    assert (
        "sandbox.auto_allow: on — not applied here: it needs a working bubblewrap sandbox" in text
    )
