"""Issue 27 [mcp]: MCP tools inside the fence and the OS sandbox.

Every test runs the real `ndomo run` as a subprocess against the scripted model server,
in a fake `$HOME` with XDG folders inside the test's folder, with real MCP servers over
stdio: `mcp-server-time` (PyPI) and tests/fakes/mcp_probe.py (the official SDK's
MCPServer). The sandbox test uses the real bubblewrap.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.bench.common import without_config
from tests.fakes.fake_model import FakeModel

PROBE = str(Path(__file__).resolve().parents[1] / "fakes" / "mcp_probe.py")

needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None,
    reason="SKIPPED LOUDLY: bubblewrap (bwrap) is not installed; `apt-get install bubblewrap` (.ci/run does)",
)


@dataclass
class World:
    root: Path
    home: Path
    ws: Path
    env: dict[str, str]
    model: FakeModel

    def ndomo(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "ndomo", *args],
            cwd=self.ws,
            env=self.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
        )

    def run(self, *flags: str, prompt: str = "go") -> subprocess.CompletedProcess[str]:
        return self.ndomo("run", prompt, "--workspace", str(self.ws), *flags)

    def user_config(self, servers: dict, **extra: object) -> None:
        data = {
            "model": {"base_url": self.model.url, "name": "fake-model", **extra},
            "mcp": {"servers": servers},
        }
        path = self.root / "config" / "ndomo" / "config.yaml"
        path.write_text(yaml.safe_dump(data), encoding="utf-8")

    def script(self, *calls: tuple[str, dict], final: str = "done") -> None:
        for i, (name, args) in enumerate(calls):
            self.model.push({"tool_calls": [{"name": name, "arguments": args, "id": f"c{i}"}]})
        self.model.push({"text": final})

    def tool_results(self) -> list[str]:
        """The tool messages the model received, in order (from the last request)."""
        last = self.model.chat_requests()[-1]["body"]["messages"]
        return [str(m.get("content")) for m in last if m.get("role") == "tool"]

    def offered(self, n: int = 0) -> list[str]:
        body = self.model.chat_requests()[n]["body"]
        return [t["function"]["name"] for t in body.get("tools") or []]


@pytest.fixture
def world(tmp_path: Path):
    home = tmp_path / "home"
    home.mkdir()
    ws = tmp_path / "ws"
    ws.mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    (ws / "README.md").write_text("# a project\n")
    (tmp_path / "config" / "ndomo").mkdir(parents=True)
    model = FakeModel(default_text="nothing more").start()
    env = without_config()
    env.update(
        HOME=str(home),
        XDG_DATA_HOME=str(tmp_path / "data"),
        XDG_CONFIG_HOME=str(tmp_path / "config"),
    )
    try:
        w = World(tmp_path, home, ws, env, model)
        w.user_config({})
        yield w
    finally:
        model.stop()


def probe(*args: str, **extra: object) -> dict:
    return {"command": sys.executable, "args": [PROBE, *args], **extra}


# @modelcontextprotocol/server-everything from npm, installed by .ci/run (outside the repo)
NPM_DIR = Path(
    os.environ.get("NDOMO_MCP_NPM_DIR")
    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ndomo" / "mcp-npm"
)
EVERYTHING = (
    NPM_DIR / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
)

TIME = {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}


def test_a_stdio_tool_result_reaches_the_model(world: World) -> None:
    world.user_config({"time": {**TIME, "read_only": True}})
    world.script(("mcp__time__get_current_time", {"timezone": "UTC"}))
    done = world.run("--yes")
    assert done.returncode == 0, done.stderr
    # the user said read-only and the tool says readOnlyHint: offered in discussion
    assert "mcp__time__get_current_time" in world.offered()
    schema = next(
        t["function"]["parameters"]
        for t in world.model.chat_requests()[0]["body"]["tools"]
        if t["function"]["name"] == "mcp__time__get_current_time"
    )
    assert "timezone" in schema["properties"]  # the server's own schema, as it gave it
    results = world.tool_results()
    assert len(results) == 1 and '"timezone": "UTC"' in results[0] and "day_of_week" in results[0]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def http_probe():
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, PROBE, "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_an_http_tool_result_reaches_the_model_and_stays_out_of_discussion(
    world: World, http_probe: str
) -> None:
    world.user_config({"remote": {"type": "http", "url": http_probe, "read_only": True}})
    world.script(("mcp__remote__echo", {"text": "over http"}))
    done = world.run("--yes")
    assert done.returncode == 0, done.stderr
    # it reaches the network: never in discussion, even read-only and readOnlyHint
    assert "mcp__remote__echo" not in world.offered()
    assert "not available in discussion mode" in world.tool_results()[0]
    world.script(("mcp__remote__echo", {"text": "over http"}))
    done = world.run("--yes", "--mode", "brainstorming")
    assert done.returncode == 0, done.stderr
    assert "mcp__remote__echo" in world.offered(2)
    assert world.tool_results()[-1].startswith("echo: over http")


def test_a_mutating_tool_is_absent_in_discussion_and_refused_if_called(world: World) -> None:
    world.user_config({"probe": probe()})
    world.script(("mcp__probe__write_note", {"name": "note.txt", "text": "hi"}))
    done = world.run("--yes")
    assert done.returncode == 0, done.stderr
    offered = world.offered()
    assert "mcp__probe__write_note" not in offered
    # not approved as read-only by the user: even the readOnlyHint tool is not read-class
    assert "mcp__probe__echo" not in offered
    (result,) = world.tool_results()
    assert "not available in discussion mode" in result
    assert not (world.ws / "note.txt").exists()
    # autopilot admits it
    world.script(("mcp__probe__write_note", {"name": "note.txt", "text": "hi"}))
    done = world.run("--yes", "--mode", "autopilot")
    assert done.returncode == 0, done.stderr
    assert "mcp__probe__write_note" in world.offered(2)
    assert (world.ws / "note.txt").read_text() == "hi"


def test_a_project_server_starts_only_after_trust_and_approval(world: World) -> None:
    marker = world.root / "marker"  # outside the workspace: written when started unsandboxed
    inside = world.ws / "started"
    project = {"mcpServers": {"probe": probe("--marker", str(inside))}}
    (world.ws / ".mcp.json").write_text(json.dumps(project))
    world.script(("mcp__probe__echo", {"text": "hello"}))
    done = world.run("--yes", "--mode", "autopilot")
    assert done.returncode == 0, done.stderr
    assert not inside.exists() and not marker.exists(), "untrusted: the server never started"
    assert "mcp__probe__echo" not in world.offered()
    assert "unknown tool" in world.tool_results()[0]

    trusted = world.ndomo("trust", str(world.ws))
    assert trusted.returncode == 0, trusted.stderr
    listed = world.ndomo("mcp", "list")
    assert "probe" in listed.stdout and "not approved" in listed.stdout, listed.stdout
    assert PROBE in listed.stdout  # the exact command is shown
    # trusted but not approved (no --yes, nobody to ask): still not started
    world.script(("mcp__probe__echo", {"text": "hello"}))
    done = world.run("--mode", "autopilot")
    assert not inside.exists(), done.stderr

    approved = world.ndomo("mcp", "approve", "--name", "probe")
    assert approved.returncode == 0, approved.stderr
    assert PROBE in approved.stdout
    health = world.ndomo("health")
    assert "mcp       probe: .mcp.json, approved, not started" in health.stdout, health.stdout
    world.script(("mcp__probe__echo", {"text": "hello"}))
    done = world.run("--yes", "--mode", "autopilot")
    assert done.returncode == 0, done.stderr
    assert inside.exists(), "approved: started"
    assert world.tool_results()[-1].startswith("echo: hello")

    # a changed definition needs a new approval
    inside.unlink()
    project["mcpServers"]["probe"]["args"].append("--tools=1")
    (world.ws / ".mcp.json").write_text(json.dumps(project))
    world.script(("mcp__probe__echo", {"text": "hello"}))
    world.run("--mode", "autopilot")
    assert not inside.exists()
    revoked = world.ndomo("mcp", "revoke", "--name", "probe")
    assert revoked.returncode == 0, revoked.stderr


class Listener:
    """A TCP listener on the host's 127.0.0.1 that records whether anyone connected."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.connected = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.connected = True
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sock.close()


@needs_bwrap
def test_a_stdio_server_is_sandboxed_like_bash(world: World) -> None:
    # /tmp is a private tmpfs in the sandbox: the probe aims at a host folder outside it
    outside_dir = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="ndomo-mcp-"))
    outside = outside_dir / "outside.txt"
    listener = Listener()
    try:
        world.user_config({"probe": probe("--marker", str(world.home / "home-marker"))})
        world.script(
            ("mcp__probe__escape", {"path": str(outside), "port": listener.port}),
            ("mcp__probe__echo", {"text": "still works"}),
        )
        done = world.run("--yes", "--mode", "autopilot")
    finally:
        listener.close()
        wrote = outside.exists()
        shutil.rmtree(outside_dir)
    assert done.returncode == 0, done.stderr
    assert not wrote, "wrote outside the workspace"
    assert not listener.connected, "reached the host's TCP listener"
    assert not (world.home / "home-marker").exists(), "home is hidden (a tmpfs) in the sandbox"
    escape, echo = world.tool_results()
    assert f"write {outside}: refused" in escape and f"connect {listener.port}: refused" in escape
    assert echo.startswith("echo: still works")
    listed = world.ndomo("mcp", "list")
    assert "sandboxed like bash" in listed.stdout


def test_a_crash_mid_call_is_a_tool_error_and_the_turn_goes_on(world: World) -> None:
    world.user_config({"probe": probe()})
    world.script(("mcp__probe__crash", {}), ("mcp__probe__echo", {"text": "after"}))
    done = world.run("--yes", "--mode", "autopilot")
    assert done.returncode == 0, done.stderr
    crash, echo = world.tool_results()
    assert "MCP server 'probe' failed during 'crash'" in crash
    assert "restarted on the next call" in crash
    assert echo.startswith("echo: after"), "restarted for the next call"


def test_tools_past_the_budget_are_deferred_behind_search(world: World) -> None:
    world.user_config({"probe": probe("--tools", "40")}, context_window=8192)
    world.script(("mcp_search", {"query": "echo"}), ("mcp__probe__echo", {"text": "found"}))
    done = world.run("--yes", "--mode", "autopilot")
    assert done.returncode == 0, done.stderr
    offered = world.offered()
    assert "mcp_search" in offered and not any(n.startswith("mcp__") for n in offered)
    search, echo = world.tool_results()
    assert "mcp__probe__echo" in search
    assert echo.startswith("echo: found")


@pytest.mark.skipif(
    not EVERYTHING.is_file() or shutil.which("node") is None,
    reason=f"SKIPPED LOUDLY: @modelcontextprotocol/server-everything is not installed in {NPM_DIR} "
    "(.ci/run installs it: npm install --prefix DIR @modelcontextprotocol/server-everything)",
)
def test_the_npm_everything_server_over_stdio_with_its_own_variable(world: World) -> None:
    world.env["OTHER_API_TOKEN"] = "canary-not-for-mcp"
    world.env["EVERYTHING_TOKEN"] = "token-for-this-server"  # scrubbed for bash, not for it
    server = {
        "command": shutil.which("node"),
        "args": [str(EVERYTHING), "stdio"],
        "env": {"EVERYTHING_TOKEN": "${EVERYTHING_TOKEN}"},
        "read_only": True,
    }
    world.user_config({"everything": server})
    world.script(
        ("mcp__everything__get-sum", {"a": 2, "b": 40}),
        ("mcp__everything__get-env", {}),
        ("mcp__everything__get-sum", {"a": "two"}),
    )
    done = world.run("--yes")
    assert done.returncode == 0, done.stderr
    offered = world.offered()
    assert "mcp__everything__get-sum" in offered  # readOnlyHint + your read_only: discussion
    assert "mcp__everything__toggle-simulated-logging" not in offered  # no hint: autopilot only
    total, env, bad = world.tool_results()
    assert "42" in total
    # its own variable passes the scrub (its name holds TOKEN); nobody else's reaches it
    assert "token-for-this-server" in env and "canary-not-for-mcp" not in env
    assert "invalid arguments" in bad  # checked against the server's schema before the call


def test_the_git_server_from_a_project_config_read_only_in_discussion(world: World) -> None:
    (world.ws / ".ndomo").mkdir()
    server = {"command": sys.executable, "args": ["-m", "mcp_server_git"]}
    (world.ws / ".ndomo" / "config.yaml").write_text(
        yaml.safe_dump({"mcp": {"servers": {"git": server}}})
    )
    assert world.ndomo("trust", str(world.ws)).returncode == 0
    approved = world.ndomo("mcp", "approve", "--name", "git", "--read-only")
    assert approved.returncode == 0, approved.stderr
    assert "(read-only)" in approved.stdout and "mcp_server_git" in approved.stdout
    world.script(
        ("mcp__git__git_status", {"repo_path": str(world.ws)}),
        ("mcp__git__git_commit", {"repo_path": str(world.ws), "message": "sneaky"}),
    )
    done = world.run("--yes")
    assert done.returncode == 0, done.stderr
    offered = world.offered()
    assert "mcp__git__git_status" in offered and "mcp__git__git_commit" not in offered
    status, commit = world.tool_results()
    assert "README.md" in status  # untracked, as git sees it
    assert "not available in discussion mode" in commit


FILESYSTEM = (
    NPM_DIR / "node_modules" / "@modelcontextprotocol" / "server-filesystem" / "dist" / "index.js"
)


@needs_bwrap
@pytest.mark.skipif(
    not FILESYSTEM.is_file() or shutil.which("node") is None,
    reason=f"SKIPPED LOUDLY: @modelcontextprotocol/server-filesystem is not installed in {NPM_DIR} "
    "(.ci/run installs it)",
)
def test_a_project_filesystem_server_given_the_home_still_cannot_read_it(world: World) -> None:
    canary = "CANARY-SSH-PRIVATE-KEY"
    (world.home / ".ssh").mkdir()
    (world.home / ".ssh" / "id_rsa").write_text(canary + "\n")
    # the project's server claims the user's home besides the workspace
    server = {
        "command": shutil.which("node"),
        "args": [str(FILESYSTEM), str(world.ws), str(world.home)],
    }
    (world.ws / ".mcp.json").write_text(json.dumps({"mcpServers": {"fs": server}}))
    assert world.ndomo("trust", str(world.ws)).returncode == 0
    world.script(
        ("mcp__fs__read_text_file", {"path": str(world.ws / "README.md")}),
        ("mcp__fs__read_text_file", {"path": str(world.home / ".ssh" / "id_rsa")}),
    )
    done = world.run("--yes", "--mode", "autopilot")  # --yes approves the server for this run
    assert done.returncode == 0, done.stderr
    readme, key = world.tool_results()
    assert "# a project" in readme
    assert canary not in json.dumps(world.model.requests)
    assert "ENOENT" in key or "no such file" in key.lower() or "denied" in key.lower(), key
    listed = world.ndomo("mcp", "list")
    assert "not approved" in listed.stdout  # --yes approved it for that run only


@pytest.mark.skipif(
    not EVERYTHING.is_file() or shutil.which("node") is None,
    reason=f"SKIPPED LOUDLY: @modelcontextprotocol/server-everything is not installed in {NPM_DIR} "
    "(.ci/run installs it: npm install --prefix DIR @modelcontextprotocol/server-everything)",
)
def test_the_npm_everything_servers_prompts_and_resources_through_ndomo_run(
    world: World,
) -> None:
    server = {"command": shutil.which("node"), "args": [str(EVERYTHING), "stdio"]}
    world.user_config({"everything": server})

    # a prompt as a slash command: its text is the turn's prompt, the model answers it
    world.model.push({"text": "sunny"})
    done = world.run(prompt="/mcp__everything__args-prompt city=Paris --state Texas")
    assert done.returncode == 0, done.stderr
    assert "sunny" in done.stdout
    (asked,) = world.model.chat_requests()
    users = [m for m in asked["body"]["messages"] if m["role"] == "user"]
    assert users[-1]["content"] == "What's weather in Paris, Texas?"

    # a prompt that embeds a resource: the resource's text is part of the prompt
    world.model.push({"text": "seen"})
    done = world.run(prompt="/mcp__everything__resource-prompt resourceType=Text resourceId=2")
    assert done.returncode == 0, done.stderr
    users = [m for m in world.model.chat_requests()[-1]["body"]["messages"] if m["role"] == "user"]
    assert "Resource 2: This is a plaintext resource" in users[-1]["content"]

    # a resource by @-mention: its text under the prompt
    world.model.push({"text": "read it"})
    uri = "demo://resource/static/document/architecture.md"
    done = world.run(prompt=f"summarize @everything:{uri}")
    assert done.returncode == 0, done.stderr
    users = [m for m in world.model.chat_requests()[-1]["body"]["messages"] if m["role"] == "user"]
    assert users[-1]["content"].startswith(f"summarize @everything:{uri}\n\nMentioned everything:")
    assert "# Everything Server – Architecture" in users[-1]["content"]

    # errors: said on stderr, nothing sent to the model
    sent = len(world.model.chat_requests())
    missing = world.run(prompt="/mcp__everything__args-prompt state=Texas")
    assert missing.returncode != 0
    assert "missing argument city; usage: /mcp__everything__args-prompt city=<city>" in (
        missing.stderr
    )
    unknown = world.run(prompt="/mcp__everything__no-such-prompt")
    assert unknown.returncode != 0
    assert "has no prompt 'no-such-prompt' (its prompts: args-prompt," in unknown.stderr
    blob = world.run(prompt="look @everything:demo://resource/dynamic/blob/1")
    assert blob.returncode != 0
    assert "demo://resource/dynamic/blob/1 is a binary resource" in blob.stderr
    assert len(world.model.chat_requests()) == sent
