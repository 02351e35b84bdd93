"""What the first token no longer waits for: the user message's store write, the busy
status, the compact system prompt and the request's size; the prompt files, the reflex
folder and the recalled notes are read while the turn's rows are written. Nothing is lost or reordered."""

from __future__ import annotations

import asyncio
import time

from ndomo import compose
from ndomo.features import instructions
from ndomo.llm import budget
from ndomo.llm.budget import Window, fit
from ndomo.llm.messages import Message
from ndomo.runtime import prefetch
from ndomo.runtime.context import TurnContext, TurnRequest
from ndomo.runtime.prompts import PromptContributor
from ndomo.runtime.runtime import Runtime
from ndomo.tools.reflexes import catalog

WAIT_S = 20.0  # only how long a broken build may hang before failing (not a timing check)


async def _until(cond) -> bool:
    end = time.monotonic() + WAIT_S
    while not cond():
        if time.monotonic() > end:
            return False
        await asyncio.sleep(0.01)
    return True


async def test_the_request_goes_out_before_the_user_message_is_stored_and_order_holds(app, fake):
    store = await app.store()
    original = store.add_message
    seen: dict[str, bool] = {}

    async def slow_add(session_id, role, content=None, **kw):
        if role == "user":  # held until the model has the request: it must not wait for this
            seen["request_first"] = await _until(lambda: len(fake.chat_requests()) > 0)
        return await original(session_id, role, content, **kw)

    store.add_message = slow_add  # type: ignore[method-assign]
    fake.push({"tool_calls": [{"name": "handback", "arguments": {"reason": "need more"}}]})
    summary = await Runtime(app, compose.plugins()).run(TurnRequest(prompt="plan the move"))
    assert seen == {"request_first": True}
    assert summary.status == "blocked"
    stored = await store.session_messages(summary.session)
    assert [m.role for m in stored] == ["user", "assistant", "tool"]  # the turn's order
    assert stored[0].content == "plan the move" and stored[0].turn_id == summary.turn_id


async def test_a_failed_turn_still_stores_its_user_message(app, fake):
    fake.push({"status": 401})
    summary = await Runtime(app, compose.plugins()).run(TurnRequest(prompt="hello?"))
    assert summary.status == "failed"
    stored = await (await app.store()).session_messages(summary.session)
    assert [(m.role, m.content) for m in stored] == [("user", "hello?")]


async def test_the_busy_status_does_not_hold_the_request_and_comes_before_the_idle_one(app, fake):
    rt = Runtime(app, compose.plugins())
    got: list[tuple[bool, bool]] = []

    async def listener(status) -> None:
        if status.busy:  # a slow editor must not delay the model request
            got.append((True, await _until(lambda: len(fake.chat_requests()) > 0)))
        else:
            got.append((False, True))

    rt.status_listeners.add(listener)
    fake.push({"text": "hi there"})
    summary = await rt.run(TurnRequest(prompt="hi"))
    assert summary.status == "done"
    assert got == [(True, True), (False, True)]


async def test_the_answer_is_stored_beside_the_checkpoint_rows_and_before_the_turn_ends(app, fake):
    store = await app.store()
    add_message, add_checkpoints, finish_turn = (
        store.add_message,
        store.add_checkpoints,
        store.finish_turn,
    )
    order: list[str] = []

    async def slow_add(session_id, role, content=None, **kw):
        if role == "assistant":  # held until the turn's checkpoint rows are on their way
            order.append(f"answer waited: {await _until(lambda: 'checkpoints' in order)}")
        result = await add_message(session_id, role, content, **kw)
        order.append(f"{role} stored")
        return result

    async def checkpoints(*a, **kw):
        order.append("checkpoints")
        return await add_checkpoints(*a, **kw)

    async def finish(*a, **kw):
        order.append("finish")
        return await finish_turn(*a, **kw)

    store.add_message = slow_add  # type: ignore[method-assign]
    store.add_checkpoints = checkpoints  # type: ignore[method-assign]
    store.finish_turn = finish  # type: ignore[method-assign]
    fake.push({"text": "the answer"})
    summary = await Runtime(app, compose.plugins()).run(TurnRequest(prompt="hi"))
    assert summary.status == "done"
    assert order[-2:] == ["assistant stored", "finish"]  # the record waits for the write
    assert "answer waited: True" in order
    stored = await store.session_messages(summary.session)
    assert [(m.role, m.content) for m in stored] == [("user", "hi"), ("assistant", "the answer")]


async def test_the_result_does_not_wait_for_the_claims_release_and_the_next_turn_does(app, fake):
    store = await app.store()
    release_session = store.release_session
    gate = asyncio.Event()
    order: list[str] = []

    async def held_release(session_id, **kw):
        await gate.wait()  # a slow store thread: the result must not wait for it
        order.append("released")
        return await release_session(session_id, **kw)

    store.release_session = held_release  # type: ignore[method-assign]
    rt = Runtime.of(app, compose.plugins())
    fake.push({"text": "one"})
    first = await asyncio.wait_for(rt.run(TurnRequest(prompt="hi")), WAIT_S)
    order.append("first answered")
    assert first.status == "done"
    fake.push({"text": "two"})
    second = asyncio.ensure_future(rt.run(TurnRequest(prompt="again", session=first.session)))
    await asyncio.sleep(0.05)
    assert not second.done() and len(fake.chat_requests()) == 1  # waits for the release
    gate.set()
    assert (await asyncio.wait_for(second, WAIT_S)).status == "done"
    assert order == ["first answered", "released", "released"]
    await rt.aclose()  # the second turn's release is settled with the runtime
    assert await store.session_claim(first.session) is None


class _Counting(PromptContributor):
    name = "counting"

    def __init__(self) -> None:
        self.compact_calls = 0

    async def contribute(self, ctx) -> str:
        return "the full prompt " * 20

    async def compact(self, ctx) -> str:
        self.compact_calls += 1
        return "short"


async def test_the_compact_prompt_is_built_only_when_the_request_must_shrink(app, fake):
    plugins = compose.plugins()
    counting = _Counting()
    plugins.prompts.add(counting)
    rt = Runtime(app, plugins)
    fake.push({"text": "ok"})
    assert (await rt.run(TurnRequest(prompt="hi"))).status == "done"
    assert counting.compact_calls == 0
    # A window too small for the full request: the compact prompt is tried.
    app.settings.model.context_window = 512
    fake.push({"text": "ok"})
    await rt.run(TurnRequest(prompt="hi"))
    assert counting.compact_calls >= 1


def test_a_second_fit_of_the_turn_measures_only_what_is_new(monkeypatch):
    # fit_request fits again with the compaction anchor in: the history and the tool lists
    # were serialised by the first fit already.
    measured: list[str] = []
    real = budget.wire_size
    monkeypatch.setattr(budget, "wire_size", lambda m: measured.append(m.content) or real(m))
    history = [Message.system("sys"), Message.user("one"), Message.user("two")]
    sizes = budget.Sizes()
    first = fit(history, [], Window(100_000, "test"), sizes=sizes)
    assert sorted(measured) == ["one", "sys", "two"]
    measured.clear()
    anchored = [Message.system("sys + anchor"), *history[1:]]
    second = fit(anchored, [], Window(100_000, "test"), sizes=sizes)
    assert measured == ["sys + anchor"]
    assert second.tokens == Window(100_000, "test").estimate(anchored, [])  # the same sums
    assert first.tokens == Window(100_000, "test").estimate(history, [])


def test_fit_does_not_measure_the_request_unless_asked(monkeypatch):
    calls = []
    real = budget.request_size
    monkeypatch.setattr(budget, "request_size", lambda *a: calls.append(1) or real(*a))
    messages = [Message.system("s"), Message.user("hello")]
    fitted = fit(messages, [], None)
    assert calls == [] and fitted.messages == messages
    assert fitted.size == real(messages, []) and fitted.tokens > 0  # measured when asked
    assert fit(messages, [], Window(100_000, "test")).tokens == Window(100_000, "test").estimate(
        messages, []
    )


async def test_prompt_files_and_reflexes_are_read_while_the_turn_row_is_written(
    app, fake, monkeypatch
):
    """Both reads start at PRE_DISPATCH: the turn row's write can wait for them to begin."""
    (app.root / "AGENTS.md").write_text("Be brief.\n")
    reads: list[str] = []
    read, sig = instructions.read_instructions, catalog.signature
    monkeypatch.setattr(
        instructions, "read_instructions", lambda a: reads.append("instructions") or read(a)
    )
    monkeypatch.setattr(catalog, "signature", lambda r: reads.append("reflexes") or sig(r))
    store = await app.store()
    start_turn = store.start_turn
    began: list[bool] = []

    async def waiting_start(*a, **kw):
        began.append(await _until(lambda: {"instructions", "reflexes"} <= set(reads)))
        return await start_turn(*a, **kw)

    store.start_turn = waiting_start  # type: ignore[method-assign]
    fake.push({"text": "ok"})
    assert (await Runtime(app, compose.plugins()).run(TurnRequest(prompt="hi"))).status == "done"
    assert began == [True]
    assert reads.count("instructions") == 1  # once a turn (the compact prompt was not built)
    assert "Be brief." in fake.chat_requests()[-1]["body"]["messages"][0]["content"]


async def test_recalled_notes_are_searched_while_the_turn_row_is_written(app, fake):
    """The notes for the prompt are searched from PRE_DISPATCH on (a prefetch), not after
    the build: the turn row's write can wait for the search to begin, and the notes still
    reach the request."""
    store = await app.store()
    await store.remember(None, "decision", "the parser keeps tokens in a deque")
    searched: list[str] = []
    search, start_turn = store.search_memories, store.start_turn

    async def recording_search(*a, **kw):
        searched.append("recall")
        return await search(*a, **kw)

    began: list[bool] = []

    async def waiting_start(*a, **kw):
        began.append(await _until(lambda: searched == ["recall"]))
        return await start_turn(*a, **kw)

    store.search_memories = recording_search  # type: ignore[method-assign]
    store.start_turn = waiting_start  # type: ignore[method-assign]
    fake.push({"text": "ok"})
    assert (
        await Runtime(app, compose.plugins()).run(TurnRequest(prompt="parser"))
    ).status == "done"
    assert began == [True] and searched == ["recall"]  # searched once
    assert "tokens in a deque" in fake.chat_requests()[-1]["body"]["messages"][-1]["content"]


class _Ctx:
    """A turn's per-feature state, as TurnContext keeps it."""

    instance = TurnContext.instance
    existing = TurnContext.existing

    def __init__(self) -> None:
        self._parts: dict = {}


async def test_take_without_a_started_read_runs_it_and_a_started_one_runs_once():
    runs = []

    async def read(ctx) -> int:
        runs.append(1)
        return len(runs)

    ctx = _Ctx()
    assert await prefetch.take(ctx, "k", read) == 1  # nothing started: read now
    prefetch.start(ctx, "k", read)
    assert await prefetch.take(ctx, "k", read) == 2
    assert await prefetch.take(ctx, "k", read) == 2 and len(runs) == 2


async def test_a_failed_prefetched_read_fails_whoever_takes_it():
    async def broken(ctx):
        raise OSError("unreadable")

    ctx = _Ctx()
    prefetch.start(ctx, "k", broken)
    try:
        await prefetch.take(ctx, "k", broken)
    except OSError as exc:
        assert "unreadable" in str(exc)
    else:
        raise AssertionError("the read's error was lost")


async def test_a_read_nobody_took_ends_with_its_turn(app, fake):
    """A turn a hook ends before it needs its prefetched reads (here: SKIP_AGENT at
    PRE_DISPATCH) still waits for them: none runs on after `run` returned (a checkpoint's
    git process left to a closing loop hung the suite)."""
    from ndomo.runtime.hooks import HookAction, HookResult, LifecycleHook, Phase

    finished: list[bool] = []

    async def slow(ctx) -> None:
        await asyncio.sleep(0.2)
        finished.append(True)

    class Skip(LifecycleHook):
        phase, name, priority = Phase.PRE_DISPATCH, "skip", 200  # after the prefetch

        async def run(self, ctx):
            return HookResult(HookAction.SKIP_AGENT)

    plugins = compose.plugins()
    plugins.hooks.add(prefetch.Prefetch("slow", "slow", slow))
    plugins.hooks.add(Skip())
    summary = await Runtime(app, plugins).run(TurnRequest(prompt="hi"))
    assert summary.status == "done" and fake.chat_requests() == []
    assert finished == [True]


async def test_the_turn_snapshot_waits_for_the_models_first_event_and_ends_before_a_tool(app, fake):
    """The checkpoint's git process does not compete with the first token: it starts once
    the model's first event arrived, and the turn's first tool still runs after it."""
    from ndomo.features.checkpoints import shadow_of
    from ndomo.runtime.events import TextDelta, ToolStarted
    from ndomo.runtime.host import BaseHost

    seen: list[str] = []

    class Host(BaseHost):
        async def emit(self, event) -> None:
            if isinstance(event, (TextDelta, ToolStarted)):
                seen.append(type(event).__name__)

    shadow = shadow_of(app)
    original = shadow.snapshot

    async def snapshot(message: str):
        seen.append(f"snapshot: {message.split(' of ')[0].split(':')[0]}")
        return await original(message)

    shadow.snapshot = snapshot  # type: ignore[method-assign]
    (app.root / "notes.txt").write_text("x\n")
    fake.push(
        {"text": "looking", "tool_calls": [{"name": "read", "arguments": {"path": "notes.txt"}}]}
    )
    fake.push({"text": "read it"})
    plugins = compose.plugins()
    summary = await Runtime(app, plugins).run(TurnRequest(prompt="read the notes"), Host())
    assert summary.status == "done", summary
    assert seen[0] == "TextDelta" and seen.index("snapshot: before a turn") < seen.index(
        "ToolStarted"
    ), seen


async def test_the_turn_snapshot_starts_after_the_first_event_was_written(app, fake):
    """A host whose write awaits the client (ACP's `session_update`) writes the first text
    before the snapshot's git process starts on the loop."""
    from ndomo.features.checkpoints import shadow_of
    from ndomo.runtime.events import TextDelta
    from ndomo.runtime.host import BaseHost

    seen: list[str] = []

    class Host(BaseHost):
        async def emit(self, event) -> None:
            if isinstance(event, TextDelta):
                for _ in range(5):  # the write's round trip to the client
                    await asyncio.sleep(0)
                seen.append("TextDelta")

    shadow = shadow_of(app)
    original = shadow.snapshot

    async def snapshot(message: str):
        seen.append("snapshot")
        return await original(message)

    shadow.snapshot = snapshot  # type: ignore[method-assign]
    fake.push({"text": "an answer"})
    summary = await Runtime(app, compose.plugins()).run(TurnRequest(prompt="hi"), Host())
    assert summary.status == "done", summary
    assert seen[:2] == ["TextDelta", "snapshot"], seen


async def test_a_turn_without_tools_records_its_start_and_end_in_one_write(app, fake):
    """The turn's end, on the way to its answer: a turn that ran no tool records its start
    and end checkpoints (the same snapshot) in one transaction, not two store hops."""
    store = await app.store()
    statements: list[str] = []
    fake.push({"text": "an answer"})
    await store.trace(statements.append)
    summary = await Runtime(app, compose.plugins()).run(TurnRequest(prompt="hi"))
    await store.trace(None)
    assert summary.status == "done", summary
    rows = await store.session_checkpoints(summary.session)
    assert [(r.kind, r.turn_id) for r in rows] == [
        ("turn_start", summary.turn_id),
        ("turn_end", summary.turn_id),
    ]
    assert rows[0].commit_id == rows[1].commit_id
    inserts = [i for i, s in enumerate(statements) if "INSERT INTO checkpoints" in s]
    assert len(inserts) == 2, statements
    between = statements[inserts[0] : inserts[1]]
    assert not any(s.strip().upper().startswith(("COMMIT", "BEGIN")) for s in between), between


async def test_a_turn_with_a_tool_still_records_its_start_before_the_tool(app, fake):
    (app.root / "notes.txt").write_text("x\n")
    fake.push({"tool_calls": [{"name": "read", "arguments": {"path": "notes.txt"}}]})
    fake.push({"text": "read it"})
    summary = await Runtime(app, compose.plugins()).run(TurnRequest(prompt="read the notes"))
    assert summary.status == "done", summary
    store = await app.store()
    rows = await store.session_checkpoints(summary.session)
    assert [r.kind for r in rows] == ["turn_start", "turn_end"]
    messages = await store.session_messages(summary.session)
    tool_row = next(m for m in messages if m.role == "tool")
    assert rows[0].created_at <= tool_row.created_at


async def test_the_history_read_is_queued_right_behind_the_claim(app, fake):
    """The session's history is read on the store's thread right after the claim, before
    the turn's row: the set-up does not wait for a third round trip before the request."""
    from ndomo.store import db as dbmod

    rt = Runtime(app, compose.plugins())
    fake.push({"text": "first"})
    await rt.run(TurnRequest(prompt="one"))
    order: list[str] = []
    original = dbmod.Db._submit

    def submit(self, fn, *args, **kw):
        import traceback

        names = [f.name for f in traceback.extract_stack(limit=8)]
        for wanted in ("claim_session", "session_messages", "start_turn"):
            if wanted in names:
                order.append(wanted)
        return original(self, fn, *args, **kw)

    dbmod.Db._submit = submit  # type: ignore[method-assign]
    try:
        fake.push({"text": "second"})
        summary = await rt.run(TurnRequest(prompt="two"))
    finally:
        dbmod.Db._submit = original  # type: ignore[method-assign]
    assert summary.status == "done"
    assert order[:3] == ["claim_session", "session_messages", "start_turn"], order
    sent = fake.chat_requests()[-1]["body"]["messages"]
    assert [m["content"] for m in sent if m["role"] in ("user", "assistant")][:3] == [
        "one",
        "first",
        "two",
    ]


async def test_a_refused_turn_drops_its_history_read_and_the_next_one_reads_it_all(app, fake):
    rt = Runtime(app, compose.plugins())
    fake.push({"text": "first"})
    first = await rt.run(TurnRequest(prompt="one"))
    refused = await rt.run(TurnRequest(prompt="two", agent="nobody", session=first.session))
    assert refused.status == "failed" and "nobody" in (refused.error or "")
    store = await app.store()
    # another process adds to the session meanwhile: the next turn reads it too
    await store.add_message(first.session, "user", "from the terminal", turn_id=None)
    await store.add_message(first.session, "assistant", "seen", turn_id=None)
    fake.push({"text": "third"})
    third = await rt.run(TurnRequest(prompt="three", session=first.session))
    assert third.status == "done"
    sent = fake.chat_requests()[-1]["body"]["messages"]
    assert [m["content"] for m in sent if m["role"] in ("user", "assistant")] == [
        "one",
        "first",
        "from the terminal",
        "seen",
        "three",
    ]


async def test_the_agents_are_read_while_the_session_is_claimed(app, fake, monkeypatch):
    """A process's first turn reads the agent files (~15 ms of files and YAML on a thread)
    beside the session's row and its claim, not after them."""
    from ndomo.agents import loader

    reads: list[str] = []
    load = loader.load_agents
    monkeypatch.setattr(loader, "load_agents", lambda *a: reads.append("agents") or load(*a))
    store = await app.store()
    claim = store.claim_session
    began: list[bool] = []

    async def waiting_claim(*a, **kw):
        began.append(await _until(lambda: reads == ["agents"]))
        return await claim(*a, **kw)

    store.claim_session = waiting_claim  # type: ignore[method-assign]
    assert app.agents is None
    fake.push({"text": "ok"})
    rt = Runtime(app, compose.plugins())
    assert (await rt.run(TurnRequest(prompt="hi"))).status == "done"
    assert began == [True] and reads == ["agents"]  # read once, and taken by the turn
    fake.push({"text": "again"})
    assert (await rt.run(TurnRequest(prompt="hi"))).status == "done"
    assert reads == ["agents"]  # loaded: not read again


async def test_an_agent_file_written_since_is_read_again_not_the_prefetched_set(app, fake):
    rt = Runtime(app, compose.plugins())
    app.prefetch_agents(rt.plugins.modes)  # read before the file exists
    await app.load_agents(rt.plugins.modes)
    agents = app.root / ".ndomo" / "agents"
    agents.mkdir(parents=True, exist_ok=True)
    (agents / "scribe.md").write_text(
        "---\nname: scribe\ndescription: writes notes\nmode: primary\n---\nWrite notes.\n"
    )
    fake.push({"text": "noted"})
    summary = await rt.run(TurnRequest(prompt="note this", agent="scribe"))
    assert summary.status == "done", summary.error
    assert summary.agent == "scribe"
