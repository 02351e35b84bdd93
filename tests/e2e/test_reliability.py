"""The server under abuse: malformed command arguments, and a SIGKILL in the middle of a turn."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from ndomo import compose
from tests.e2e.conftest import command
from tests.fakes.fake_model import FakeModel

INVALID_PARAMS = -32602
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)


def malformed(fields: dict[str, bool]) -> st.SearchStrategy[tuple[list[Any], str]]:
    """Argument lists that no command accepts, with a note of why (for the failure message)."""
    not_object = (JSON.filter(lambda v: v is not None and not isinstance(v, dict))).map(
        lambda v: ([v], "not an object")
    )
    unknown_key = st.tuples(st.text(min_size=1, max_size=12).map(lambda s: "zz_" + s), JSON).map(
        lambda kv: ([{kv[0]: kv[1]}], "unknown argument")
    )
    two_args = st.tuples(JSON, JSON).map(lambda ab: ([ab[0], ab[1]], "two arguments"))
    options = [not_object, unknown_key, two_args]
    if fields:
        # A list is valid for none of the declared field types (str, int, bool, literals, dict, Range).
        options.append(
            st.sampled_from(sorted(fields)).flatmap(
                lambda f: st.lists(JSON, max_size=3).map(lambda v: ([{f: v}], f"{f} is a list"))
            )
        )
    required = [f for f, req in fields.items() if req]
    if required:
        options.append(st.just(([{}], "required argument missing")))
    return st.one_of(options)


def command_fields() -> dict[str, dict[str, bool]]:
    return {
        a.command: {name: f.is_required() for name, f in a.params.model_fields.items()}
        for a in compose.actions().all("lsp")
    }


async def test_every_command_rejects_malformed_arguments_and_keeps_serving(lsp, tmp_path):
    client = await lsp.start(tmp_path)
    listed = {c["command"] for c in await command(client, "ndomo.commands")}
    fields = command_fields()
    assert listed == set(fields)
    loop = asyncio.get_running_loop()
    seen: dict[str, int] = {}

    def send(name: str, args: list[Any]) -> Any:
        params = types.ExecuteCommandParams(command=name, arguments=args)
        future = asyncio.run_coroutine_threadsafe(
            client.workspace_execute_command_async(params), loop
        )
        return future.result(timeout=30)

    @settings(
        max_examples=250, deadline=None, database=None, suppress_health_check=list(HealthCheck)
    )
    @given(
        st.sampled_from(sorted(fields)).flatmap(
            lambda n: st.tuples(st.just(n), malformed(fields[n]))
        )
    )
    def fuzz(case: tuple[str, tuple[list[Any], str]]) -> None:
        name, (args, why) = case
        seen[name] = seen.get(name, 0) + 1
        try:
            result = send(name, args)
        except JsonRpcException as exc:
            assert exc.code == INVALID_PARAMS, f"{name} {args!r} ({why}): {exc.code} {exc}"
            assert str(exc).strip(), f"{name}: empty error message"
            return
        raise AssertionError(f"{name} accepted {args!r} ({why}): {result!r}")

    await asyncio.to_thread(fuzz)
    assert len(seen) >= len(fields) // 2  # the sampling reached most commands
    mode = await command(client, "ndomo.mode.get", {})
    assert mode["mode"] and mode["modes"]
    assert client._server.returncode is None


def turn_status(db: Path) -> list[tuple[int, str]]:
    if not db.exists():
        return []
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
    try:
        return [(r[0], r[1]) for r in conn.execute("SELECT id, status FROM turns ORDER BY id")]
    except sqlite3.OperationalError:  # the schema is not there yet
        return []
    finally:
        conn.close()


async def wait_for(predicate, timeout: float = 30.0):
    for _ in range(int(timeout / 0.05)):
        value = predicate()
        if value:
            return value
        await asyncio.sleep(0.05)
    raise AssertionError("condition not reached in time")


async def test_sigkill_mid_turn_then_restart_marks_the_turn_interrupted(lsp, tmp_path):
    db = tmp_path / ".ndomo" / "ndomo.db"
    with FakeModel(default_text="after restart") as fake:
        fake.push({"text": "a very slow answer " * 50, "chunks": 50, "chunk_delay": 0.5})
        env = {"NDOMO_BASE_URL": fake.url}
        first = await lsp.start(tmp_path, env=env)
        pending = asyncio.ensure_future(
            command(first, "ndomo.turn", {"prompt": "work for a while"})
        )
        running = await wait_for(lambda: [t for t in turn_status(db) if t[1] == "running"])
        await wait_for(lambda: fake.chat_requests())  # the model is streaming
        first._server.kill()  # SIGKILL: no shutdown, no finally blocks
        await first._server.wait()
        pending.cancel()
        assert turn_status(db) == running  # nobody marked it yet

        second = await lsp.start(tmp_path, env=env)
        await wait_for(lambda: dict(turn_status(db)).get(running[0][0]) == "interrupted")
        health = await command(second, "ndomo.health", {})
        assert health["database"]["ok"] is True
        summary = await command(second, "ndomo.turn", {"prompt": "still there?"})
        assert (summary["status"], summary["answer"]) == ("done", "after restart")
        assert dict(turn_status(db))[running[0][0]] == "interrupted"
