"""`ndomo run` handed to the resident process (ndomo.terminal.resident), as a user runs it:
real `ndomo` processes, the real resident they start, the scripted model, a pty for the
terminal prompt, real signals.

Whether a run was handed over is read off the caller itself: a handed-over run never
imports pydantic (the resident's child does the work), an in-process one always does.
Every test stops its resident (the suite's `NDOMO_RESIDENT=0` is turned on per test).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ndomo.terminal.resident import client, server
from tests.fakes.fake_model import FakeModel

# The caller, reporting on stderr how its run went: handed over, or run in this process.
PROBE = (
    "import sys\n"
    "from ndomo.compose import main\n"
    "code = main(sys.argv[1:])\n"
    "print('IN-PROCESS' if 'pydantic' in sys.modules else 'HANDED', file=sys.stderr)\n"
    "sys.exit(code)\n"
)


class Resident:
    """A workspace, a model, and the environment that turns the resident on."""

    def __init__(self, tmp: Path, fake: FakeModel) -> None:
        self.tmp, self.fake = tmp, fake
        self.ws = tmp / "ws"
        self.ws.mkdir()
        (self.ws / "README.md").write_text("# a project\n")
        self.folder = tmp / "resident"
        self.env = {
            **os.environ,
            "NDOMO_RESIDENT": "1",
            "NDOMO_RESIDENT_DIR": str(self.folder),
            "NDOMO_RESIDENT_IDLE": "120",
            "NDOMO_BASE_URL": fake.url,
        }

    def probe(self, *args: str, env: dict | None = None, **kw) -> tuple[int, str, str, bool]:
        """`ndomo <args>` through PROBE: (exit code, stdout, stderr, handed over)."""
        done = subprocess.run(
            [sys.executable, "-c", PROBE, *args],
            env={**self.env, **(env or {})},
            cwd=kw.pop("cwd", self.ws),
            stdin=kw.pop("stdin", subprocess.DEVNULL),
            capture_output=True,
            text=True,
            timeout=120,
            **kw,
        )
        handed = done.stderr.rstrip().endswith("HANDED")
        assert handed or done.stderr.rstrip().endswith("IN-PROCESS"), done.stderr
        return done.returncode, done.stdout, done.stderr, handed

    def run(self, prompt: str = "say hi", *flags: str, env: dict | None = None):
        return self.probe("run", "--workspace", str(self.ws), prompt, *flags, env=env)

    def ndomo(self, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "ndomo", *args],
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            timeout=60,
        )

    def locks(self) -> list[str]:
        if not self.folder.is_dir():
            return []
        return sorted(str(p) for p in self.folder.glob("run-*.lock"))

    def pid(self) -> int | None:
        pids = [p for p in map(server.running, self.locks()) if p is not None]
        return pids[0] if pids else None

    def wait_up(self, other_than: int | None = None, timeout: float = 60.0) -> int:
        """The resident's pid once it answers (its socket bound after its imports)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            pid = self.pid()
            socks = list(self.folder.glob("run-*.sock")) if self.folder.is_dir() else []
            if pid is not None and pid != other_than and socks:
                return pid
            time.sleep(0.05)
        raise AssertionError("no resident came up")

    def slow_turn(self, argv: list[str], **kw) -> subprocess.Popen:
        """A caller whose turn has sent its request and waits on a model that never goes
        on (its first piece streamed, the rest held)."""
        self.fake.push(
            {"text": "a slow answer", "chunks": 3, "hold_until": str(self.tmp / "never")}
        )
        before = len(self.fake.chat_requests())
        caller = subprocess.Popen(argv, env=self.env, stdin=subprocess.DEVNULL, **kw)
        end = time.monotonic() + 60
        while len(self.fake.chat_requests()) == before and time.monotonic() < end:
            time.sleep(0.05)
        return caller

    def children(self, pid: int) -> list[int]:
        try:
            text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
        except OSError:
            return []
        return [int(c) for c in text.split()]


def gone(pid: int, timeout: float = 15.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        state = (
            Path(f"/proc/{pid}/stat").read_text().split()[2]
            if Path(f"/proc/{pid}").exists()
            else "X"
        )
        if state == "Z":  # ended; its parent (the test's run) reaps it
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def res(tmp_path: Path) -> Iterator[Resident]:
    with FakeModel(default_text="a short answer") as fake:
        r = Resident(tmp_path, fake)
        try:
            yield r
        finally:
            r.ndomo("resident", "--stop")
            for lock in r.locks():
                pid = server.running(lock)
                if pid is not None:
                    os.kill(pid, signal.SIGKILL)
                    assert gone(pid)


def test_a_second_run_is_handed_over_and_answers_the_same(res: Resident) -> None:
    code, out, err, handed = res.run()
    assert (code, handed) == (0, False), err
    assert "a short answer" in out
    pid = res.wait_up()
    assert f"running: pid {pid}" in res.ndomo("resident").stdout
    code, again, err, handed = res.run()
    assert (code, handed) == (0, True), err
    assert "a short answer" in again and "[done]" in again
    assert len(res.fake.chat_requests()) == 2
    # the second run continued the first's session: its history went to the model
    messages = res.fake.chat_requests()[-1]["body"]["messages"]
    assert sum(m["role"] == "user" for m in messages) == 2
    assert res.pid() == pid and res.children(pid) == []  # the child ended and was reaped


def test_a_handed_over_caller_loads_only_the_hand_over(res: Resident) -> None:
    """The caller's whole cost is Python, `ndomo.compose` and the client: no library, none
    of `logging`, `typing` or `dataclasses` (~30 ms together on this project's VM)."""
    res.run()
    res.wait_up()
    report = (
        "import sys\n"
        "from ndomo.compose import main\n"
        "code = main(sys.argv[1:])\n"
        "mods = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('ndomo', 'pydantic', 'yaml', 'logging', 'typing', 'dataclasses', 'asyncio'))\n"
        "print('LOADED', ' '.join(mods), file=sys.stderr)\n"
        "sys.exit(code)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", report, "run", "--workspace", str(res.ws), "say hi"],
        env=res.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "a short answer" in done.stdout
    loaded = done.stderr.rsplit("LOADED", 1)[1].split()
    assert loaded == [
        "ndomo",
        "ndomo.compose",
        "ndomo.terminal",
        "ndomo.terminal.resident",
        "ndomo.terminal.resident.client",
    ]


def test_the_callers_environment_folder_and_exit_code_are_the_runs(res: Resident) -> None:
    res.run()
    res.wait_up()
    # the environment: a model name only this run's environment says
    code, _out, err, handed = res.probe(
        "run", "say hi", env={"NDOMO_MODEL": "another-model"}, cwd=res.ws
    )
    assert (code, handed) == (0, True), err
    assert res.fake.chat_requests()[-1]["body"]["model"] == "another-model"
    # the working folder: no --workspace, the run found the workspace from where it ran
    assert "no workspace" not in err
    # a usage error: its message on the caller's stderr, its exit code the caller's
    code, _out, err, handed = res.run("say hi", "--agent", "nosuch")
    assert handed and code == 2, err
    assert "nosuch" in err
    # a run from a folder that is no workspace at all
    lone = res.tmp / "lone"
    lone.mkdir()
    code, _out, err, handed = res.probe("run", "say hi", cwd=lone)
    assert handed and code == 2, err


def test_a_caller_with_other_limits_gets_a_resident_of_its_own(res: Resident) -> None:
    """A child inherits the resident's limits: a caller under a lower `ulimit -n` is not
    handed to a resident started without it."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    lower = min(soft, 512)
    assert lower != soft or soft > 256, "the test needs a limit it can lower"
    lower = lower if lower != soft else 256

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (lower, hard))

    def limited_run() -> tuple[int, str, str, bool]:
        return res.probe("run", "--workspace", str(res.ws), "say hi", preexec_fn=limited)

    res.run()
    first = res.wait_up()
    code, _out, err, handed = limited_run()
    assert (code, handed) == (0, False), err
    end = time.monotonic() + 60  # it started one of its own, beside the first
    while time.monotonic() < end:
        pids = {server.running(lock) for lock in res.locks()} - {None}
        if len(pids) == 2 and len(list(res.folder.glob("run-*.sock"))) == 2:
            break
        time.sleep(0.05)
    assert first in pids and len(pids) == 2
    assert limited_run()[3] is True
    assert res.run()[3] is True


def test_ctrl_c_reaches_the_turn_and_it_stops(res: Resident) -> None:
    res.run()
    pid = res.wait_up()
    caller = res.slow_turn(
        [sys.executable, "-c", PROBE, "run", "--workspace", str(res.ws), "go slowly"],
        cwd=res.ws,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert res.children(pid), "no child ran the turn"
        caller.send_signal(signal.SIGINT)
        out, err = caller.communicate(timeout=30)
    finally:
        if caller.poll() is None:
            caller.kill()
            caller.wait()
    assert caller.returncode == 130, err
    assert "[cancelled]" in err and err.rstrip().endswith("HANDED"), err
    assert res.fake.wait_for_disconnect(timeout=10)
    assert res.children(pid) == []


def test_a_killed_caller_takes_its_turn_with_it(res: Resident) -> None:
    res.run()
    pid = res.wait_up()
    caller = res.slow_turn(
        [sys.executable, "-m", "ndomo", "run", "--workspace", str(res.ws), "go slowly"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        (child,) = res.children(pid)
        caller.kill()  # SIGKILL: no handler forwards it; the resident sees the socket close
        caller.wait()
        assert gone(child), "the turn outlived its caller"
    finally:
        if caller.poll() is None:
            caller.kill()
            caller.wait()
    assert res.fake.wait_for_disconnect(timeout=10)
    assert res.pid() == pid  # the resident itself goes on


def test_the_trust_question_is_asked_in_the_callers_terminal(res: Resident) -> None:
    """A child of the resident has no controlling terminal: reading the caller's (passed)
    terminal does not stop it (SIGTTIN), and the answer is recorded."""
    import pty

    res.run()
    res.wait_up()
    fresh = res.tmp / "fresh"
    fresh.mkdir()
    (fresh / ".git").mkdir()
    (fresh / "AGENTS.md").write_text("Be brief.\n")  # something the folder configures
    master, slave = pty.openpty()
    try:
        os.write(master, b"y\n")
        code, out, err, handed = res.probe(
            "run", "--workspace", str(fresh), "say hi", stdin=slave, cwd=fresh
        )
    finally:
        os.close(slave)
        os.close(master)
    assert (code, handed) == (0, True), err
    assert "Trust this folder?" in err
    assert "a short answer" in out
    trusted = res.ndomo("trust", "--list")
    assert str(fresh) in trusted.stdout, trusted.stdout + trusted.stderr


def test_changed_code_on_disk_starts_a_fresh_resident(res: Resident) -> None:
    """Every module the resident loaded is checked when a run comes: one changed (here a
    `sitecustomize` every Python loads) and the run goes on in-process, the old resident
    exits, and a new one takes its place."""
    site = res.tmp / "site"
    site.mkdir()
    custom = site / "sitecustomize.py"
    custom.write_text("LOADED = True\n")
    path = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH", "")]))
    res.env["PYTHONPATH"] = path
    res.run()
    old = res.wait_up()
    assert res.run()[3] is True
    later = time.time() + 10
    os.utime(custom, (later, later))
    code, out, err, handed = res.run()
    assert (code, handed) == (0, False), err
    assert "a short answer" in out
    assert gone(old), "the stale resident did not exit"
    new = res.wait_up(other_than=old)
    assert new != old
    assert res.run()[3] is True


def test_a_hung_resident_is_not_waited_for(res: Resident) -> None:
    """A resident that does not answer (stopped here) costs a run the answer timeout, then
    the run goes on in-process."""
    res.run()
    pid = res.wait_up()
    os.kill(pid, signal.SIGSTOP)
    try:
        started = time.monotonic()
        code, out, err, handed = res.run()
        waited = time.monotonic() - started
    finally:
        os.kill(pid, signal.SIGCONT)
    assert (code, handed) == (0, False), err
    assert "a short answer" in out
    assert waited >= client.ANSWER_TIMEOUT


def test_an_idle_resident_exits_and_leaves_no_socket(res: Resident) -> None:
    res.env["NDOMO_RESIDENT_IDLE"] = "1"
    res.run()
    pid = res.wait_up()
    assert gone(pid, timeout=30)
    assert list(res.folder.glob("run-*.sock")) == []
    assert res.run()[3] is False  # none answers: in-process, and it starts another


def test_switched_off_every_run_is_in_process_and_none_starts(res: Resident) -> None:
    res.env["NDOMO_RESIDENT"] = "0"
    for _ in range(2):
        code, _out, err, handed = res.run()
        assert (code, handed) == (0, False), err
    time.sleep(1)
    assert res.locks() == [] and res.pid() is None
    assert "off (NDOMO_RESIDENT=0)" in res.ndomo("resident").stdout


def test_a_folder_others_can_open_is_not_used(res: Resident) -> None:
    res.folder.mkdir(mode=0o755)
    res.folder.chmod(0o755)
    for _ in range(2):
        code, _out, err, handed = res.run()
        assert (code, handed) == (0, False), err
    time.sleep(1)
    assert list(res.folder.iterdir()) == []
    status = res.ndomo("resident")
    assert status.returncode == 1 and "no private folder" in status.stderr


def test_a_folder_too_deep_for_a_socket_runs_in_process_and_starts_none(res: Resident) -> None:
    """A unix socket's path has at most 107 bytes: a folder deeper than that gets no resident
    (one started there could never listen), and the run goes on as ever."""
    deep = res.tmp / ("d" * 100)
    res.env["NDOMO_RESIDENT_DIR"] = str(deep)
    for _ in range(2):
        code, out, err, handed = res.run()
        assert (code, handed) == (0, False), err
        assert "a short answer" in out
    time.sleep(1)
    assert not deep.exists() or list(deep.glob("run-*.lock")) == []


@pytest.mark.skipif(os.getuid() != 0, reason="chown to another user needs root")
def test_a_folder_another_user_made_is_not_used(res: Resident) -> None:
    res.folder.mkdir(mode=0o700)
    os.chown(res.folder, 65534, 65534)
    code, _out, err, handed = res.run()
    assert (code, handed) == (0, False), err
    assert client.folder({"NDOMO_RESIDENT_DIR": str(res.folder)}) is None
