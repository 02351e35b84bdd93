"""The server process's life: stdio loop, a clean wind-down, and exiting when the editor dies.

pygls' own `start_io` raises `SystemExit` from inside the `exit` handler: every task still
running (a shutdown closing the store, a turn) is cancelled mid-await and prints a
traceback, and its stdin reader thread can keep the interpreter alive. Here `exit`, a
closed stdin and a dead editor all end the same way: pending work is cancelled, the App
(store, served processes, model clients) is closed, and the process exits.

The editor's `processId` is watched with a pidfd read through the event loop (Linux):
no timer, so an idle server does no periodic work. Where pidfds don't exist a slow check
(every `SLOW_CHECK_S`) stands in.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
import threading
from collections.abc import Generator
from typing import TYPE_CHECKING, Any, cast

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

from ndomo.lsp.inert import inert_params

if TYPE_CHECKING:
    from ndomo.lsp.server import NdomoServer
    from ndomo.lsp.stdout import BatchedStdout

log = logging.getLogger("ndomo.lsp")

SLOW_CHECK_S = 10.0  # parent check where there is no pidfd (macOS, BSD)
CANCEL_GRACE_S = 5.0  # how long cancelled work gets to record its end before the store closes
CLOSE_GRACE_S = 10.0  # how long closing the App may take before the process exits anyway


class NdomoProtocol(LanguageServerProtocol):
    """pygls' protocol, with an `exit` that winds the server down instead of `sys.exit`.
    It owns the server's `Life` (`life_of(server)`)."""

    def __init__(self, server: Any, converter: Any) -> None:
        super().__init__(server, converter)
        self.life = Life(cast("NdomoServer", server))  # stdio loop, wind-down, the editor's process

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams) -> Generator[Any, Any, Any]:
        """pygls' initialize, plus the modes and agents (`experimental.ndomo`)."""
        from ndomo.lsp import protocol
        from ndomo.lsp.names import advertise

        server = cast("NdomoServer", self._server)
        result = yield from super().lsp_initialize(params)
        names = yield advertise, (server,), None
        server.catalog = names
        result.capabilities.experimental = {protocol.EXPERIMENTAL: names}
        return result

    def notify(self, method: str, params: Any | None = None) -> None:
        """Every notification; a message, log line or progress with its text made inert."""
        super().notify(method, inert_params(method, params))

    def send_request(self, method: str, params: Any | None = None, *args: Any, **kwargs: Any):
        """Every request; `window/showMessageRequest` with its text made inert."""
        return super().send_request(method, inert_params(method, params), *args, **kwargs)

    @lsp_method(types.EXIT)
    def lsp_exit(self, *args: Any) -> None:  # type: ignore[override]  # pygls' is a generator that calls sys.exit; ours only asks Life to wind down
        life = self.life
        life.request_exit(0 if life.shutdown_requested else 1, "exit received")


STDIN_LINE_LIMIT = 1 << 20  # a header line longer than this is not LSP


class _LoopStdin:
    """asyncio's StreamReader with what pygls's message loop expects of a file: a body cut
    short by the editor going away comes back short (pygls stops on it) instead of raising,
    and each line read lets the loop run once first — messages already buffered would
    otherwise be handled back to back, before the tasks the previous one started have begun
    (`exit` right behind `shutdown` would not see the shutdown)."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader

    async def readline(self) -> bytes:
        await asyncio.sleep(0)
        return await self._reader.readline()

    async def readexactly(self, n: int) -> bytes:
        try:
            return await self._reader.readexactly(n)
        except asyncio.IncompleteReadError as exc:
            return exc.partial


class Life:
    """One per server: runs the stdio loop and ends it once, whatever asked first."""

    def __init__(self, server: NdomoServer) -> None:
        self.server = server
        self.exit_code = 0
        self.exiting = False
        self.shutdown_requested = False  # `shutdown` arrived (it may still be running)
        self._main: asyncio.Task | None = None
        self._closing: asyncio.Task | None = None
        self._pidfd: int | None = None
        self._slow_check: asyncio.TimerHandle | None = None
        self._stdout: BatchedStdout | None = None  # stdio's writer, made on the loop

    # -- ending --------------------------------------------------------------------------
    def request_exit(self, code: int, why: str) -> None:
        if self.exiting:
            return
        self.exiting = True
        self.exit_code = code
        self.server.closing = True
        log.debug("stopping: %s", why)
        if self._main is not None and not self._main.done():
            self._main.cancel()
        elif self._main is None:  # not started by serve_stdio (e.g. TCP): pygls' own way out
            sys.exit(code)

    def close_app(self) -> asyncio.Task:
        """Close the App once (store last); every caller awaits the same task."""
        if self._closing is None:
            self._closing = asyncio.get_running_loop().create_task(self._close_app())
        return self._closing

    async def _close_app(self) -> None:
        self.server.closing = True
        apps = list(self.server.apps.values())
        for app in apps:  # each folder's store; one failing does not keep the others open
            try:
                await app.aclose()
            except Exception:  # noqa: BLE001 - one folder failing to close does not keep the others open
                log.exception("closing the workspace %s failed", app.root)

    async def _wind_down(self) -> None:
        self.server.closing = True
        self.stop_watching()
        # Requests first, as pygls' own shutdown does: a generator handler's outer future,
        # once cancelled, ignores its inner task ending in CancelledError (no traceback).
        for fut in list(self.server.protocol._request_futures.values()):
            fut.cancel()
        me = asyncio.current_task()
        others = [t for t in asyncio.all_tasks() if t is not me and t is not self._closing]
        for t in others:
            t.cancel()
        if others:
            await asyncio.wait(others, timeout=CANCEL_GRACE_S)
        try:
            await asyncio.wait_for(asyncio.shield(self.close_app()), CLOSE_GRACE_S)
        except TimeoutError:
            log.warning("closing the workspace took over %.0f s; exiting anyway", CLOSE_GRACE_S)
        except Exception:  # noqa: BLE001 - the process exits whatever closing raised
            log.exception("closing the workspace failed")

    # -- the stdio loop ------------------------------------------------------------------
    def serve_stdio(self) -> int:
        try:
            asyncio.run(self._run(None, stdout=True))
        except KeyboardInterrupt:
            self.exit_code = 130
        except BrokenPipeError:
            log.warning("the editor closed the connection")
        finally:
            if self._stdout is not None:  # what the last steps of the loop gathered
                self._stdout.flush()
        return self.exit_code

    async def _stdin(self):
        """stdin read by the event loop: pygls's reader hops to a thread for each header line
        and body (three wake-ups of another thread per message, each one a wait for a core on
        a busy machine, in front of every request). Where the loop cannot watch stdin (a
        regular file, or stdin and stdout the same socket, which non-blocking mode would
        break for writes), pygls's threaded reader."""
        from pygls.io_ import StdinAsyncReader

        loop = asyncio.get_running_loop()
        try:
            same = os.path.sameopenfile(sys.stdin.fileno(), sys.stdout.fileno())
        except (OSError, ValueError):
            same = True
        if not same:
            reader = asyncio.StreamReader(limit=STDIN_LINE_LIMIT)
            try:
                await loop.connect_read_pipe(
                    lambda: asyncio.StreamReaderProtocol(reader), sys.stdin.buffer
                )
                return _LoopStdin(reader)
            except (OSError, ValueError) as exc:  # e.g. a regular file
                log.debug(
                    "stdin cannot be watched by the event loop (%s): reading in a thread", exc
                )
        return StdinAsyncReader(sys.stdin.buffer, self.server.thread_pool)

    async def _run(self, reader, *, stdout: bool = False) -> None:
        from pygls.io_ import run_async

        self._main = asyncio.current_task()
        loop = asyncio.get_running_loop()
        if stdout:
            from ndomo.lsp.stdout import BatchedStdout

            self._stdout = BatchedStdout(sys.stdout.buffer, loop)
            self.server.protocol.set_writer(self._stdout)
        if reader is None:
            reader = await self._stdin()
        for sig in (signal.SIGTERM, signal.SIGHUP) if os.name == "posix" else ():
            loop.add_signal_handler(sig, self.request_exit, 0, f"signal {sig.name}")
        stop = threading.Event()
        self.server._stop_event = stop
        try:
            await run_async(
                stop_event=stop,
                reader=reader,
                protocol=self.server.protocol,
                logger=log,
                error_handler=self.server.report_server_error,
            )
            log.debug("stdin closed")  # the editor went away without `exit`
            self.exit_code = self.exit_code or (0 if self.server.protocol._shutdown else 1)
        except asyncio.CancelledError:
            if not self.exiting:
                raise
            if self._main is not None:  # set by serve_stdio, which is what runs here
                self._main.uncancel()
        finally:
            await self._wind_down()

    # -- the editor's process ------------------------------------------------------------
    def watch_parent(self, pid: int | None) -> None:
        """Exit when the process `pid` (the editor, from `initialize`) ends."""
        if not pid or pid == os.getpid() or os.name != "posix":
            return
        loop = asyncio.get_running_loop()
        if hasattr(os, "pidfd_open"):
            try:
                fd = os.pidfd_open(pid)
            except ProcessLookupError:  # another pid namespace (containers): nothing to watch
                log.warning("editor process %d is not visible from here; not watching it", pid)
                return
            except OSError:
                fd = None
            if fd is not None:
                self._pidfd = fd
                loop.add_reader(fd, self._parent_gone, pid)  # readable once the process ended
                return
        self._schedule_slow_check(pid)

    def _schedule_slow_check(self, pid: int) -> None:
        loop = asyncio.get_running_loop()

        def check() -> None:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                self._parent_gone(pid)
                return
            except PermissionError:  # alive, owned by someone else
                pass
            self._slow_check = loop.call_later(SLOW_CHECK_S, check)

        self._slow_check = loop.call_later(SLOW_CHECK_S, check)

    def _parent_gone(self, pid: int) -> None:
        self.stop_watching()
        log.warning("the editor (process %d) has exited; stopping", pid)
        self.request_exit(1, "editor process gone")

    def stop_watching(self) -> None:
        if self._pidfd is not None:
            with contextlib.suppress(RuntimeError):
                asyncio.get_running_loop().remove_reader(self._pidfd)
            os.close(self._pidfd)
            self._pidfd = None
        if self._slow_check is not None:
            self._slow_check.cancel()
            self._slow_check = None


def life_of(server: LanguageServer) -> Life:
    """The Life of a server built with `NdomoProtocol` (`lsp.features.create_server`)."""
    protocol = server.protocol
    if not isinstance(protocol, NdomoProtocol):
        raise TypeError(
            f"{type(server).__name__} runs {type(protocol).__name__}, not NdomoProtocol"
        )
    return protocol.life


def finish(code: int) -> None:
    """Leave now: flush what was written, then exit without waiting for stray threads
    (pygls' stdin reader blocks in `readline`; it would hold the interpreter open)."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe or stream: nothing to flush
            stream.flush()
    os._exit(code)
