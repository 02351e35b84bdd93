"""The resident process (`ndomo resident --serve`, started by a run; see the package's
docstring). One thread, one `selectors` loop: it accepts a caller, checks it, forks a
child that becomes the caller and runs the command, and reports the child's exit.

Why each check:
- **The caller is this user, in this process's namespaces.** A child runs a turn with the
  caller's environment, outside any sandbox. A command ndomo runs in bubblewrap has its own
  mount, PID and user namespaces: were the socket ever in its reach (a bind mount, a folder
  set by `NDOMO_RESIDENT_DIR`), it is still refused.
- **Its code is the code on disk.** Each loaded module's file is stat'ed when a run comes;
  a change (an upgrade, an edit) makes it refuse with `stale` and exit: the run goes on
  in-process and starts a fresh resident.
- **One thread when it forks.** A fork copies only the forking thread; the resident starts
  none (imports only), and refuses a run if one appeared.

A child resets what a fresh process would have from its start (signal handlers, the
environment, time zone, temporary folder, working folder, umask, argv, stdio), runs the
command, then ends as the interpreter would: threads joined, `atexit` run, streams flushed.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import gc
import importlib
import json
import os
import selectors
import signal
import socket
import struct
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from ndomo.terminal.resident.client import ENV_IDLE, IDLE_DEFAULT, STALE, identity, socket_path

# Namespaces a caller must share with the resident (`/proc/<pid>/ns/<name>`).
NAMESPACES = ("mnt", "pid", "user", "net", "ipc", "uts", "cgroup")
MAX_REQUEST = 4 << 20  # bytes: argv + environment; more is not a run
READ_TIMEOUT = 5.0  # seconds a caller has to send its request once connected

Run = Callable[[list[str]], int]


def refusal(conn: socket.socket) -> str | None:
    """Why this caller may not hand a run over (None: it may): another user, or another
    namespace than the resident's, or one whose namespaces cannot be read."""
    pid, uid, _gid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
    if uid != os.getuid():
        return "another user"
    if pid <= 0:
        return "a caller whose process is out of sight"
    for ns in NAMESPACES:
        try:
            ours = os.stat(f"/proc/self/ns/{ns}")
        except FileNotFoundError:
            continue  # a kernel without this namespace kind
        try:
            theirs = os.stat(f"/proc/{pid}/ns/{ns}")
        except OSError:
            return f"a caller whose {ns} namespace cannot be read"
        if (theirs.st_dev, theirs.st_ino) != (ours.st_dev, ours.st_ino):
            return f"a caller in another {ns} namespace (a sandbox)"
    return None


def _read_request(conn: socket.socket) -> dict[str, Any]:
    """The caller's 4-byte length and JSON object (no file descriptors yet)."""
    conn.settimeout(READ_TIMEOUT)
    head = _exactly(conn, 4)
    (size,) = struct.unpack(">I", head)
    if size > MAX_REQUEST:
        raise ValueError("request too large")
    request = json.loads(_exactly(conn, size))
    if not isinstance(request, dict):
        raise ValueError("request is not an object")
    return request


def _exactly(conn: socket.socket, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        more = conn.recv(min(65536, size - len(data)))
        if not more:
            raise ValueError("request cut short")
        data += more
    return bytes(data)


def _read_stdio(conn: socket.socket) -> list[int]:
    """The caller's fds 0, 1 and 2, sent once it heard `ready`; [] when it sent other."""
    _data, fds, _flags, _addr = socket.recv_fds(conn, 1, 3)
    if len(fds) != 3:
        for fd in fds:
            os.close(fd)
        return []
    return fds


class Resident:
    """The accept loop: callers in, children out, until idle or stopped."""

    def __init__(self, where: str, key: str, run: Run, idle: float, lock: int) -> None:
        self.where, self.key, self.run, self.idle = where, key, run, idle
        self.lock = lock  # the lock file's fd: a child lets go of it, or it would hold the lock
        self.path = socket_path(where, key)
        self.sel = selectors.DefaultSelector()
        self.children: dict[int, socket.socket] = {}
        self.files: dict[str, int] = {}  # each loaded module's file → its mtime (ns) at load
        self.listener: socket.socket | None = None
        self.bound = 0
        self.wake_r, self.wake_w = os.pipe()

    # -- start and end --------------------------------------------------------------------

    def preload(self, modules: list[str]) -> None:
        """Import what the run that started this one imported (one that fails is left to
        the child, which imports it as a fresh process would), then remember the files."""
        for name in modules:
            with contextlib.suppress(Exception):
                importlib.import_module(name)
        for module in list(sys.modules.values()):
            path = getattr(module, "__file__", None)
            if path:
                with contextlib.suppress(OSError):
                    self.files[path] = os.stat(path).st_mtime_ns
        gc.freeze()  # start-up's heap, shared copy-on-write with every child

    def listen(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)  # a dead resident's: the lock says none lives
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(self.path)
        os.chmod(self.path, 0o600)
        self.bound = os.stat(self.path).st_ino  # the socket file this one made
        listener.listen(16)
        listener.setblocking(False)
        self.listener = listener
        self.sel.register(listener, selectors.EVENT_READ, "accept")
        os.set_blocking(self.wake_r, False)
        os.set_blocking(self.wake_w, False)
        self.sel.register(self.wake_r, selectors.EVENT_READ, "reap")
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.set_wakeup_fd(self.wake_w)

    def close(self) -> None:
        """Stop answering: the socket file goes (if it is still this one's), children
        that still run finish on their own and their callers get their exit code."""
        if self.listener is not None:
            with contextlib.suppress(OSError):
                if os.stat(self.path).st_ino == self.bound:
                    os.unlink(self.path)
            self.sel.unregister(self.listener)
            self.listener.close()
            self.listener = None

    def stale(self) -> bool:
        for path, mtime in self.files.items():
            try:
                if os.stat(path).st_mtime_ns != mtime:
                    return True
            except OSError:
                return True
        return False

    # -- the loop --------------------------------------------------------------------------

    def serve(self) -> None:
        last = time.monotonic()
        while self.listener is not None or self.children:
            timeout = None if self.children else max(0.0, self.idle - (time.monotonic() - last))
            events = self.sel.select(timeout)
            if not events and not self.children:
                break  # idle for `idle` seconds
            for key, _mask in events:
                if key.data == "accept":
                    self._accept()
                elif key.data == "reap":
                    self._reap()
                else:
                    self._caller_gone(key.data, key.fileobj)  # type: ignore[arg-type]
            last = time.monotonic()
        self.close()

    def _accept(self) -> None:
        assert self.listener is not None
        try:
            conn, _ = self.listener.accept()
        except BlockingIOError:
            return
        conn.setblocking(True)
        fds: list[int] = []
        try:
            why = refusal(conn)
            if why is not None:
                conn.sendall(f"no {why}\n".encode())
                return
            request = _read_request(conn)
            if request.get("key") != self.key:
                conn.sendall(b"no another interpreter\n")
            elif request.get("op") == "stop":
                conn.sendall(b"stopped\n")
                self.close()
            elif request.get("op") != "run":
                conn.sendall(b"no bad request\n")
            elif self.stale():
                conn.sendall(f"no {STALE}\n".encode())
                self.close()
            elif threading.active_count() != 1:
                conn.sendall(b"no threads running\n")
            else:
                # Only now does the caller send its stdio: a resident that never got this far
                # (stopped, refusing) holds none of the caller's pipes open.
                conn.sendall(b"ready\n")
                fds = _read_stdio(conn)
                if not fds:
                    conn.sendall(b"no bad request\n")
                else:
                    conn.settimeout(None)
                    self._fork(conn, request, fds)
                    conn = None  # type: ignore[assignment]  # the child's now, until its exit
        except (OSError, ValueError):
            pass  # a caller that left, or sent no run: nothing to answer
        finally:
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)
            if conn is not None:
                conn.close()

    def _fork(self, conn: socket.socket, request: dict[str, Any], fds: list[int]) -> None:
        pid = os.fork()
        if pid == 0:  # the child: never returns into this loop
            code = 1
            try:
                self._forget(conn)
                code = become(request, fds, self.run)
            finally:
                os._exit(code)
        self.children[pid] = conn
        with contextlib.suppress(OSError):
            conn.sendall(f"pid {pid}\n".encode())
        self.sel.register(conn, selectors.EVENT_READ, pid)

    def _forget(self, conn: socket.socket) -> None:
        """In a child: let go of the resident's sockets, pipe and signal set-up."""
        signal.set_wakeup_fd(-1)
        for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        self.sel.close()
        if self.listener is not None:
            self.listener.close()
        for other in self.children.values():
            other.close()
        os.close(self.wake_r)
        os.close(self.wake_w)
        os.close(self.lock)
        conn.close()

    def _reap(self) -> None:
        with contextlib.suppress(OSError):
            while os.read(self.wake_r, 512):
                pass
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            conn = self.children.pop(pid, None)
            if conn is None:
                continue
            code = os.waitstatus_to_exitcode(status)
            with contextlib.suppress(OSError):
                conn.sendall(f"exit {128 - code if code < 0 else code}\n".encode())
            with contextlib.suppress(KeyError):  # unregistered already if its caller left
                self.sel.unregister(conn)
            conn.close()

    def _caller_gone(self, pid: int, conn: socket.socket) -> None:
        """The caller's end closed (it was killed) while its child runs: the child gets
        the hang-up a closed terminal gives."""
        try:
            more = conn.recv(64)
        except OSError:
            more = b""
        if more:
            return  # the protocol has nothing more to say; ignore
        self.sel.unregister(conn)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGHUP)


# -- the child ---------------------------------------------------------------------------


def become(request: dict[str, Any], fds: list[int], run: Run) -> int:
    """In a forked child: take the caller's place, run its command, end as it would."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    if sys.stdout is not None:  # as a fresh Python: line-buffered on a terminal
        sys.stdout.reconfigure(line_buffering=os.isatty(1))  # type: ignore[union-attr]
    env = {str(k): str(v) for k, v in dict(request.get("env") or {}).items()}
    os.environ.clear()
    os.environ.update(env)
    time.tzset()
    tempfile.tempdir = None  # $TMPDIR read again
    argv = [str(a) for a in request.get("argv") or []]
    sys.argv = [str(request.get("argv0") or "ndomo"), *argv]
    try:
        os.chdir(str(request.get("cwd") or "/"))
        os.umask(int(request.get("umask", 0o022)))
        code = run(argv)
    except SystemExit as exc:
        code = _exit_code(exc.code)
    except BaseException:  # noqa: BLE001 - what an uncaught exception does to a process
        sys.excepthook(*sys.exc_info())
        code = 1
    return _finish(code)


def _exit_code(value: object) -> int:
    if value is None:
        return 0
    if isinstance(value, int):
        return value & 0xFF
    print(value, file=sys.stderr)
    return 1


def _finish(code: int) -> int:
    """What the interpreter does at exit: non-daemon threads joined, `atexit` run, the
    streams flushed."""
    shutdown = getattr(threading, "_shutdown", None)
    if shutdown is not None:
        with contextlib.suppress(Exception):
            shutdown()
    with contextlib.suppress(Exception):
        atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    return code


# -- the entry ---------------------------------------------------------------------------


def lock_path(where: str, key: str) -> str:
    return socket_path(where, key)[: -len(".sock")] + ".lock"


@contextlib.contextmanager
def _lock(where: str, key: str) -> Iterator[int | None]:
    """One resident per socket: the lock file beside it, held, holds the resident's pid."""
    fd = os.open(lock_path(where, key), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield None
            return
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        try:
            yield fd
        finally:
            os.ftruncate(fd, 0)
    finally:
        os.close(fd)


def running(lock: str) -> int | None:
    """The pid of the resident holding the lock file `lock` (`lock_path`), None when none does."""
    try:
        fd = os.open(lock, os.O_RDONLY)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            text = os.read(fd, 32).decode().strip()
            return int(text) if text.isdigit() else None
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def idle_seconds(env: dict[str, str] | os._Environ[str] = os.environ) -> float:
    raw = env.get(ENV_IDLE, "")
    try:
        return max(0.0, float(raw)) if raw else IDLE_DEFAULT
    except ValueError:
        return IDLE_DEFAULT


def serve(spec: dict[str, Any], run: Run) -> int:
    """Be the resident `spec` describes (`where`, `key`, `modules`), until idle."""
    where, key = str(spec["where"]), str(spec["key"])
    if key != identity():
        return 2  # started with other flags or settings than its caller: it could not serve it
    devnull = os.open(os.devnull, os.O_RDWR)
    for target in (0, 1, 2):
        os.dup2(devnull, target)
    os.close(devnull)
    with _lock(where, key) as lock:
        if lock is None:
            return 0  # another resident serves this socket
        resident = Resident(where, key, run, idle_seconds(), lock)
        resident.preload([str(m) for m in spec.get("modules") or []])
        resident.listen()
        resident.serve()
    return 0
