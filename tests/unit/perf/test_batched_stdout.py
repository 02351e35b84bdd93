"""The server's stdout: a loop step's messages leave in one write after the step, in order;
another thread's write goes out at once behind them; nothing is lost when the loop ends or
the editor is gone."""

from __future__ import annotations

import asyncio
import io
import threading

from ndomo.lsp.stdout import BatchedStdout


class _Pipe(io.RawIOBase):
    """stdout as the server sees it: each write() call recorded apart."""

    def __init__(self, broken: bool = False) -> None:
        self.writes: list[bytes] = []
        self.broken = broken

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        if self.broken:
            raise BrokenPipeError(32, "Broken pipe")
        self.writes.append(bytes(data))
        return len(data)


async def test_a_steps_messages_leave_in_one_write_after_the_step():
    pipe = _Pipe()
    out = BatchedStdout(pipe, asyncio.get_running_loop())
    for msg in (b"one;", b"two;", b"three;"):
        out.write(msg)
    assert pipe.writes == []  # the step goes on: the editor is not woken under it
    await asyncio.sleep(0)
    assert pipe.writes == [b"one;two;three;"]
    out.write(b"four;")
    await asyncio.sleep(0)
    assert pipe.writes == [b"one;two;three;", b"four;"]


async def test_another_threads_write_goes_out_at_once_behind_what_was_gathered():
    pipe = _Pipe()
    out = BatchedStdout(pipe, asyncio.get_running_loop())
    out.write(b"loop;")
    thread = threading.Thread(target=out.write, args=(b"thread;",))
    thread.start()
    thread.join()
    assert pipe.writes == [b"loop;thread;"]
    await asyncio.sleep(0)  # the scheduled flush finds nothing left
    assert pipe.writes == [b"loop;thread;"]


def test_what_the_last_step_gathered_is_written_by_flush_after_the_loop():
    pipe = _Pipe()
    loop = asyncio.new_event_loop()
    box: dict[str, BatchedStdout] = {}

    def last_step() -> None:
        box["out"] = BatchedStdout(pipe, loop)
        box["out"].write(b"shutdown result;")
        loop.stop()  # the loop ends before the step's flush runs

    loop.call_soon(last_step)
    try:
        loop.run_forever()
    finally:
        loop.close()
    assert pipe.writes == []
    box["out"].flush()  # serve_stdio's, once the loop is over
    assert pipe.writes == [b"shutdown result;"]
    box["out"].write(b"late;")  # no loop running: written at once
    assert pipe.writes == [b"shutdown result;", b"late;"]


async def test_a_closed_pipe_is_logged_once_and_later_messages_are_dropped(caplog):
    pipe = _Pipe(broken=True)
    out = BatchedStdout(pipe, asyncio.get_running_loop())
    out.write(b"a;")
    await asyncio.sleep(0)
    out.write(b"b;")
    await asyncio.sleep(0)
    warnings = [r for r in caplog.records if "closed the connection" in r.getMessage()]
    assert len(warnings) == 1


async def test_the_closed_pipes_log_line_does_not_lock_the_writer():
    # The server's log handler sends each line to the editor through this writer: the
    # warning about the closed pipe comes back into write() (it hung the server once).
    import logging

    pipe = _Pipe(broken=True)
    out = BatchedStdout(pipe, asyncio.get_running_loop())

    class _ToEditor(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            out.write(self.format(record).encode())

    handler = _ToEditor()
    logging.getLogger("ndomo.lsp").addHandler(handler)
    try:
        done = threading.Event()

        def from_a_thread() -> None:  # written at once, as pygls's thread pool would
            out.write(b"a;")
            done.set()

        threading.Thread(target=from_a_thread, daemon=True).start()
        assert await asyncio.to_thread(done.wait, 5)
        out.write(b"b;")
        await asyncio.sleep(0)
    finally:
        logging.getLogger("ndomo.lsp").removeHandler(handler)


async def test_the_answers_text_is_written_within_the_step_that_sent_it():
    # The step that sends the first token may go on reading the answer's next chunks: the
    # text goes out at once, the other events after the step, in order behind it.
    import json

    from ndomo.lsp.host import LspHost
    from ndomo.runtime.events import TextDelta, ToolStarted

    pipe = _Pipe()

    class _Protocol:
        def __init__(self) -> None:
            self.writer = BatchedStdout(pipe, asyncio.get_running_loop())

        def notify(self, method: str, params: dict) -> None:
            self.writer.write(json.dumps({"method": method, "params": params}).encode() + b"\n")

    class _Server:
        protocol = _Protocol()

    host = LspHost(_Server())
    await host.emit(ToolStarted(call_id="x", name="read", arguments={}, turn_id=1))
    await host.emit(TextDelta(text="first", turn_id=1))
    written = b"".join(pipe.writes).decode()
    assert '"tool_started"' in written and '"first"' in written  # no await in between
    assert written.index('"tool_started"') < written.index('"first"')
