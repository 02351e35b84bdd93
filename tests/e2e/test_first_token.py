"""The first text of a turn reaches the editor at once: neither the progress token's round
trip to the editor nor the delta coalescing holds it back, and the progress still ends."""

from __future__ import annotations

import asyncio

from lsprotocol import types

from tests.bench.lsp_client import start, stop
from tests.fakes.fake_model import FakeModel


async def test_first_text_does_not_wait_for_the_progress_token(tmp_path):
    text_seen = asyncio.Event()
    order: list[str] = []
    progress: list[str] = []

    async def create(params):
        # An editor slow to answer: the token comes back only after the first text arrived.
        try:
            await asyncio.wait_for(text_seen.wait(), 20)
            order.append("create answered after text")
        except TimeoutError:
            order.append("create answered without text")
        return None

    def event(params):
        if params.get("kind") == "text" and not text_seen.is_set():
            order.append("text")
            text_seen.set()

    def on_progress(params):
        value = params.value if hasattr(params, "value") else params["value"]
        kind = value.get("kind") if isinstance(value, dict) else getattr(value, "kind", None)
        progress.append(kind)

    await _one_turn(
        tmp_path,
        {"text": "one two three", "chunks": 3, "chunk_delay": 0.05},
        {
            types.WINDOW_WORK_DONE_PROGRESS_CREATE: create,
            "ndomo/turn/event": event,
            "$/progress": on_progress,
        },
    )
    assert order == ["text", "create answered after text"]
    assert progress and progress[0] == "begin" and progress[-1] == "end"


async def _one_turn(folder, answer: dict, handlers: dict, *flags: str) -> None:
    """One `ndomo.turn` against a server started with `flags`, the client's `handlers` on."""
    with FakeModel([answer]) as fake:
        client, _ = await start(
            [__import__("sys").executable, "-m", "ndomo", "serve", *flags],
            folder,
            {"NDOMO_BASE_URL": fake.url},
            handlers=handlers,
        )
        try:
            res = await client.workspace_execute_command_async(
                types.ExecuteCommandParams(command="ndomo.turn", arguments=[{"prompt": "hi"}])
            )
            status = res.get("status") if isinstance(res, dict) else getattr(res, "status", None)
            assert status == "done"
        finally:
            await stop(client)


async def _logged_turn(folder, *flags: str) -> list[str]:
    """The editor-log lines a server started with `flags` sends over one turn."""
    lines: list[str] = []

    def log_message(params):
        lines.append(params.message if hasattr(params, "message") else params["message"])

    answer = {"text": "one two", "chunks": 2}
    await _one_turn(folder, answer, {types.WINDOW_LOG_MESSAGE: log_message}, *flags)
    return lines


async def test_the_model_request_line_stays_out_of_the_editor_log_unless_debugging(tmp_path):
    # httpx logs each request at INFO once the response's head is in, before the turn reads
    # its first token: sent to the editor, that line is on every first token's way.
    (tmp_path / "info").mkdir()
    (tmp_path / "debug").mkdir()
    quiet = await _logged_turn(tmp_path / "info")
    debug = await _logged_turn(tmp_path / "debug", "--log-level", "debug")
    assert not [line for line in quiet if "HTTP Request" in line]
    assert [line for line in debug if "HTTP Request: POST" in line]
