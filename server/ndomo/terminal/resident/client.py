"""`ndomo run`'s hand-over to the resident process (see the package's docstring).

Standard library only, and nothing heavy of it: this runs before any of ndomo's own
imports, in every `ndomo run`, and its cost is the whole of a handed-over run's start.

The exchange on the unix socket (`<folder>/run-<id>.sock`):
- the client sends a 4-byte length and a JSON request: `{"op": "run", "key", "argv0",
  "argv", "cwd", "env", "umask"}` (or `{"op": "stop", "key"}`, answered `stopped`);
- the resident answers `ready` (or `no <reason>`: refused, the run goes on in-process);
- the client sends one byte with its fds 0, 1 and 2 attached (SCM_RIGHTS);
- the resident answers `pid N` (the child running the turn), later `exit N`.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import struct
import sys
import zlib

ENV_SWITCH = "NDOMO_RESIDENT"  # "0" (or off/no/false): no resident, every run in-process
ENV_DIR = "NDOMO_RESIDENT_DIR"  # where the sockets live (default: below)
ENV_IDLE = "NDOMO_RESIDENT_IDLE"  # seconds without a run before the resident exits
IDLE_DEFAULT = 300.0
ANSWER_TIMEOUT = 10.0  # seconds to connect and hear `pid N`; then the run goes on here
MAX_SOCKET_PATH = 107  # bytes: a unix socket's path (sun_path is 108 with its NUL)
STALE = "stale"  # the refusal that asks for a new resident: its code changed on disk
# Interpreter settings a fresh `python` reads from the environment once, at start: a
# resident serves only callers whose values are its own.
_START_ENV = ("PYTHON", "LC_", "LANG")
_LIMITS = (
    "RLIMIT_AS", "RLIMIT_CORE", "RLIMIT_CPU", "RLIMIT_DATA", "RLIMIT_FSIZE",
    "RLIMIT_MEMLOCK", "RLIMIT_NOFILE", "RLIMIT_NPROC", "RLIMIT_RSS", "RLIMIT_STACK",
)  # fmt: skip
# Signals forwarded to the child, so Ctrl-C or a `kill` reaches the turn.
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


def switched_off(env: dict[str, str] | os._Environ[str] = os.environ) -> bool:
    return env.get(ENV_SWITCH, "").strip().lower() in ("0", "off", "no", "false")


def folder(env: dict[str, str] | os._Environ[str] = os.environ) -> str | None:
    """The folder of this user's resident sockets, created private; None when it is not
    this user's alone (another user made it first, or it is open to others).

    `$NDOMO_RESIDENT_DIR`, else `$XDG_RUNTIME_DIR/ndomo` when that is under /run, else
    /tmp/ndomo-<uid>. The sandbox puts empty folders over /tmp and /run, so a sandboxed
    command does not see the default sockets (and the resident checks every caller)."""
    uid = os.getuid()
    path = env.get(ENV_DIR, "")
    if not path:
        runtime = env.get("XDG_RUNTIME_DIR", "")
        path = f"{runtime}/ndomo" if runtime.startswith("/run/") else f"/tmp/ndomo-{uid}"
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return None
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != uid or st.st_mode & 0o077:
        return None
    return path


def _cgroup() -> str:
    try:
        with open("/proc/self/cgroup") as f:
            return f.read()
    except OSError:
        return ""


def identity(env: dict[str, str] | os._Environ[str] = os.environ) -> str:
    """What a resident must share with its caller to run the caller's command as the
    caller's own process would: the interpreter, its flags, ndomo's location, the
    environment Python reads only at start, the user and groups, the limits (`ulimit`)
    and the control group (a scope with a memory cap) a child inherits from the resident."""
    import resource  # a small C module, ~0.3 ms

    ndomo = sys.modules["ndomo"]
    limits = [resource.getrlimit(getattr(resource, n)) for n in _LIMITS if hasattr(resource, n)]
    parts = [
        f"{os.getuid()}:{os.geteuid()}:{os.getgid()}:{os.getegid()}:{sorted(os.getgroups())}",
        repr(limits),
        _cgroup(),
        sys.executable,
        sys.version,
        repr(sys.flags),
        repr(sorted(sys._xoptions.items())),
        repr(sys.warnoptions),
        os.path.dirname(ndomo.__file__ or ""),
        getattr(ndomo, "__version__", ""),
        *sorted(f"{k}={v}" for k, v in env.items() if k.startswith(_START_ENV)),
    ]
    return "\n".join(parts)


def socket_path(where: str, key: str) -> str:
    return f"{where}/run-{zlib.crc32(key.encode()):08x}.sock"


class Handover:
    """What became of a hand-over: `code` is the run's exit code when the resident ran it;
    None means the run goes on in this process, and `start` says whether it starts a
    resident for the next run afterwards (none answered, or the one that did is stale).
    A plain class: `dataclasses` would cost this path more than the rest of it."""

    __slots__ = ("code", "key", "start", "where")

    def __init__(
        self, code: int | None, start: bool = False, where: str = "", key: str = ""
    ) -> None:
        self.code, self.start, self.where, self.key = code, start, where, key


def hand_over(args: list[str]) -> Handover:
    """Run `ndomo <args>` in the resident when it is a `run` one can take."""
    if args[:1] != ["run"] or {"-h", "--help"} & set(args) or switched_off():
        return Handover(None)
    where = folder()
    if where is None:
        return Handover(None)
    key = identity()
    if len(socket_path(where, key).encode()) > MAX_SOCKET_PATH:
        return Handover(None)  # no socket can be bound there: nothing to start either
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    # a resident that hangs (stopped, swapped out) is not waited for
    sock.settimeout(ANSWER_TIMEOUT)
    try:
        sock.connect(socket_path(where, key))
    except OSError:
        sock.close()
        return Handover(None, start=True, where=where, key=key)
    try:
        return _handed(sock, args, where, key)
    finally:
        sock.close()


def request(key: str, args: list[str]) -> bytes:
    umask = os.umask(0o022)
    os.umask(umask)
    body = {
        "op": "run",
        "key": key,
        "argv0": sys.argv[0] if sys.argv else "ndomo",
        "argv": args,
        "cwd": os.getcwd(),
        "env": dict(os.environ),
        "umask": umask,
    }
    return framed(body)


def framed(body: dict) -> bytes:
    """A request as sent: its JSON's length (4 bytes, big-endian), then the JSON."""
    data = json.dumps(body).encode()
    return struct.pack(">I", len(data)) + data


def _handed(sock: socket.socket, args: list[str], where: str, key: str) -> Handover:
    try:
        sock.sendall(request(key, args))
        answers = sock.makefile("rb")
        first = answers.readline().decode().strip()
        if first == "ready":  # checked: now the terminal, which a refusal never gets
            socket.send_fds(sock, [b"\0"], [0, 1, 2])
            first = answers.readline().decode().strip()
    except OSError:  # a closed stdio fd, a folder gone, a resident ending or hung: run here
        return Handover(None)
    if not first.startswith("pid "):
        stale = first == f"no {STALE}"
        return Handover(None, start=stale, where=where, key=key)
    child = int(first[4:])
    sock.settimeout(None)  # the turn takes as long as it takes

    def forward(signum: int, _frame: object) -> None:
        try:  # noqa: SIM105 - contextlib would add ~5 ms of imports to every handed-over run
            os.kill(child, signum)
        except ProcessLookupError:
            pass

    for sig in FORWARDED:
        signal.signal(sig, forward)
    try:
        last = answers.readline().decode().strip()
    except OSError:
        last = ""
    if last.startswith("exit "):
        return Handover(int(last[5:]))
    print("ndomo: the resident process ended before the run did", file=sys.stderr)
    return Handover(1)


def stop(where: str, key: str) -> bool:
    """Ask this interpreter's resident to exit; False when none answered."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(ANSWER_TIMEOUT)
    try:
        sock.connect(socket_path(where, key))
        sock.sendall(framed({"op": "stop", "key": key}))
        return sock.makefile("rb").readline().strip() == b"stopped"
    except OSError:
        return False
    finally:
        sock.close()


def start(where: str, key: str) -> None:
    """Start a resident for the next run, detached (its own session, no stdio of ours),
    importing the modules this run imported."""
    import subprocess

    modules = [
        name
        for name, module in list(sys.modules.items())
        if getattr(module, "__file__", None) and not name.startswith("__")
    ]
    spec = json.dumps({"where": where, "key": key, "modules": modules}).encode()
    argv = [
        sys.executable,
        *subprocess._args_from_interpreter_flags(),  # type: ignore[attr-defined]
        "-m",
        "ndomo",
        "resident",
        "--serve",
    ]
    try:
        child = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd="/",
            start_new_session=True,
        )
        assert child.stdin is not None
        child.stdin.write(spec)
        child.stdin.close()
    except OSError:
        return
    # It outlives this process by design: not a child to wait for.
    child.returncode = 0
