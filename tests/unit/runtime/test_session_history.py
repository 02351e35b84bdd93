"""Sessions in the store: every message persisted, resumed after a restart, one turn at a
time across processes, opened and exported from the stored conversation."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ndomo import compose
from ndomo.app import App
from ndomo.features.sessions import ExportParams, OpenParams, session_export, session_open
from ndomo.runtime.context import TurnRequest
from ndomo.runtime.runtime import Runtime
from ndomo.store.owner import hostname


def user_texts(request):
    return [m["content"] for m in request["body"]["messages"] if m["role"] == "user"]


async def fresh_app(root, fake) -> App:
    a = App(root)
    a.settings.model.base_url = fake.url
    a.settings.model.max_retries = 0
    return a


async def test_every_message_is_stored_with_its_turn(app, fake):
    (app.root / "notes.txt").write_text("milk\n")
    fake.push({"tool_calls": [{"name": "read", "arguments": {"path": "notes.txt"}}]})
    fake.push(
        {"tool_calls": [{"name": "handback", "arguments": {"reason": "need the shop's name"}}]}
    )
    rt = Runtime(app, compose.plugins())
    summary = await rt.run(TurnRequest(prompt="what do I buy?"))
    assert summary.status == "blocked"
    stored = await (await app.store()).session_messages(summary.session)
    assert [m.role for m in stored] == ["user", "assistant", "tool", "assistant", "tool"]
    assert {m.turn_id for m in stored} == {summary.turn_id}
    assert stored[1].tool_calls[0]["name"] == "read" and "milk" in stored[2].content
    assert stored[3].tool_calls[0]["arguments"] == {
        "reason": "need the shop's name"
    }  # the hand-back


async def test_a_restarted_runtime_resumes_the_latest_session_with_its_history(tmp_path, fake):
    first = await fresh_app(tmp_path, fake)
    fake.push({"text": "the capital is Paris"})
    s1 = await Runtime(first, compose.plugins()).run(TurnRequest(prompt="capital of France?"))
    await first.aclose()

    second = await fresh_app(tmp_path, fake)  # a new process: new App, new Runtime, same database
    try:
        rt = Runtime(second, compose.plugins())
        fake.push({"text": "about 2 million"})
        s2 = await rt.run(TurnRequest(prompt="and its population?"))
        assert s2.session == s1.session
        sent = fake.chat_requests()[-1]["body"]["messages"]
        assert [(m["role"], m["content"]) for m in sent[1:]] == [
            ("user", "capital of France?"),
            ("assistant", "the capital is Paris"),
            ("user", "and its population?"),
        ]
        fresh = await rt.new_session()
        fake.push({"text": "which city?"})
        s3 = await rt.run(TurnRequest(prompt="and its population?"))
        assert s3.session == fresh.id != s1.session
        assert user_texts(fake.chat_requests()[-1]) == ["and its population?"]
    finally:
        await second.aclose()


async def test_stored_history_is_never_trimmed_only_what_the_model_gets(app, fake):
    app.settings.history_chars = 1000
    rt = Runtime(app, compose.plugins())
    for i in range(3):
        fake.push({"text": f"answer {i} " + "z" * 600})
        summary = await rt.run(TurnRequest(prompt=f"question {i}"))
    assert user_texts(fake.chat_requests()[2]) == ["question 1", "question 2"]
    stored = await (await app.store()).session_messages(summary.session)
    assert [m.content for m in stored if m.role == "user"] == [
        "question 0",
        "question 1",
        "question 2",
    ]


async def test_a_session_held_by_a_live_process_is_refused_and_a_dead_ones_claim_is_taken(
    app, fake
):
    rt = Runtime(app, compose.plugins())
    state = await rt.session()
    store = await app.store()
    live = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    )
    try:
        await store.claim_session(state.id, owner=f"{hostname()}:{live.pid}")
        refused = await rt.run(TurnRequest(prompt="hello"))
        assert refused.status == "failed" and refused.turn_id is None
        assert f"a turn is already running in session {state.id}" in refused.error
        assert fake.chat_requests() == []
    finally:
        live.communicate(b"")
    # the owner is gone now: its claim is taken over and the turn runs, then releases
    fake.push({"text": "hi"})
    ran = await rt.run(TurnRequest(prompt="hello"))
    assert ran.status == "done"
    assert await store.session_claim(state.id) is None


async def test_open_switches_the_current_session_and_returns_its_conversation(app, fake):
    rt = Runtime.of(app)
    fake.push({"tool_calls": [{"name": "glob", "arguments": {"pattern": "*.txt"}}]})
    fake.push({"text": "no text files"})
    old = await rt.run(TurnRequest(prompt="any text files?"))
    await rt.new_session()
    view = await session_open(app, OpenParams(session=old.session))
    assert view.session == old.session == rt.current_session_id == view.status.session
    (turn,) = view.turns
    assert turn.prompt == "any text files?" and turn.status == "done"
    assert [i.kind for i in turn.items] == ["tool", "text"]
    assert turn.items[0].name == "glob" and turn.items[0].result is not None
    assert (
        await (await app.store()).latest_session()
    ).id == old.session  # `ndomo run` continues it
    import pytest

    from ndomo.actions import ActionError

    with pytest.raises(ActionError, match="no session 'nope'"):
        await session_open(app, OpenParams(session="nope"))


async def test_export_writes_the_whole_conversation(app, fake):
    rt = Runtime.of(app)
    fake.push({"tool_calls": [{"name": "handback", "arguments": {"reason": "which database?"}}]})
    summary = await rt.run(TurnRequest(prompt="migrate the data"))
    out = await session_export(app, ExportParams())
    assert (
        out.path == str(app.root / ".ndomo" / "sessions" / f"{summary.session}.md")
        and out.turns == 1
    )
    text = Path(out.path).read_text(encoding="utf-8")
    assert "**prompt:** migrate the data" in text and "`handback`" in text
    assert "_handed back: which database?_" in text
    elsewhere = await session_export(app, ExportParams(path="out/chat.md"))
    assert elsewhere.path == str(app.root / "out" / "chat.md")


async def test_ndomo_run_prints_a_commands_output_under_its_call():
    import io

    from ndomo.runtime.events import ToolOutput, ToolStarted
    from ndomo.terminal.host import TerminalHost

    out = io.StringIO()
    host = TerminalHost(out=out, interactive=False)
    await host.emit(ToolStarted(call_id="c", name="bash", arguments={"command": "make"}))
    await host.emit(ToolOutput(call_id="c", name="bash", text="cc -c a.c\ncc -c "))
    await host.emit(ToolOutput(call_id="c", name="bash", text="b.c\n"))
    assert out.getvalue() == "  → bash(command='make')\n    | cc -c a.c\n    | cc -c b.c\n"


async def test_a_turn_reads_only_the_messages_stored_since_the_last_one(tmp_path, fake):
    """The stored history grows every turn; each turn reads only what is new — including
    what another process (the CLI) added to the same session meanwhile."""
    app = await fresh_app(tmp_path, fake)
    try:
        rt = Runtime(app, compose.plugins())
        store = await app.store()
        reads: list[int] = []
        real = store.session_messages

        async def spy(session_id, **kw):
            reads.append(kw.get("after_id", 0))
            return await real(session_id, **kw)

        store.session_messages = spy  # type: ignore[method-assign]  # count what each turn reads
        fake.push({"text": "one"})
        s1 = await rt.run(TurnRequest(prompt="first"))
        fake.push({"text": "two"})
        await rt.run(TurnRequest(prompt="second"))
        stored = await real(s1.session)  # first, one, second, two

        other = App(tmp_path)  # another process answers in the same session
        try:
            await (await other.store()).add_message(s1.session, "user", "from the CLI")
        finally:
            await other.aclose()
        fake.push({"text": "three"})
        await rt.run(TurnRequest(prompt="third"))
        # the 1st turn found nothing, the 2nd read all there was ("first", "one"), the 3rd only
        # what came after those
        assert reads == [0, 0, stored[1].id], reads
        sent = fake.chat_requests()[-1]["body"]["messages"]
        assert [m["content"] for m in sent if m["role"] == "user"] == [
            "first",
            "second",
            "from the CLI",
            "third",
        ]
    finally:
        await app.aclose()


async def test_a_dangling_tool_call_is_answered_once_in_every_later_turn(tmp_path, fake):
    """A tool call stored without its result (a turn killed mid-call) goes to the model
    answered as not run — in the next turn and in the ones after, where the conversation is
    read incrementally — once, right after the call."""
    from ndomo.runtime.history import SKIPPED

    app = await fresh_app(tmp_path, fake)
    try:
        rt = Runtime(app, compose.plugins())
        fake.push({"text": "one"})
        sid = (await rt.run(TurnRequest(prompt="first"))).session
        store = await app.store()
        call = {"id": "c1", "name": "read", "arguments": {"path": "a.py"}, "raw": ""}
        await store.add_message(sid, "user", "read it")
        await store.add_message(sid, "assistant", None, tool_calls=[call])
        for prompt in ("second", "third"):
            fake.push({"text": "ok"})
            await rt.run(TurnRequest(prompt=prompt))
            sent = fake.chat_requests()[-1]["body"]["messages"]
            roles = [m["role"] for m in sent]
            tools = [m for m in sent if m["role"] == "tool"]
            assert [(m["tool_call_id"], m["content"]) for m in tools] == [("c1", SKIPPED)]
            assert roles[roles.index("tool") - 1] == "assistant"
        assert [m["content"] for m in sent if m["role"] == "user"] == [
            "first",
            "read it",
            "second",
            "third",
        ]
    finally:
        await app.aclose()


async def test_a_failed_store_write_leaves_a_valid_history_for_the_next_turn(tmp_path, fake):
    """Any write of a message may fail (a full disk, a locked file): the next turn's request
    must still be a valid conversation, here with the assistant message holding the call
    lost and its tool result stored."""
    first = await fresh_app(tmp_path, fake)
    (tmp_path / "notes.txt").write_text("milk\n")
    store = await first.store()
    real_add = store.add_message

    async def failing_add(session_id, role, content=None, **kw):
        if role == "assistant" and kw.get("tool_calls"):
            raise OSError("disk full")
        return await real_add(session_id, role, content, **kw)

    store.add_message = failing_add  # type: ignore[method-assign]
    fake.push({"tool_calls": [{"name": "read", "arguments": {"path": "notes.txt"}}]})
    fake.push({"text": "milk"})
    await Runtime(first, compose.plugins()).run(TurnRequest(prompt="what do I buy?"))
    await first.aclose()

    second = await fresh_app(tmp_path, fake)
    try:
        fake.push({"text": "nothing else"})
        await Runtime(second, compose.plugins()).run(TurnRequest(prompt="anything else?"))
        sent = fake.chat_requests()[-1]["body"]["messages"]
        assert [m["role"] for m in sent[1:]] == ["user", "assistant", "user"]
    finally:
        await second.aclose()


async def test_a_lone_surrogate_in_a_message_is_stored_replaced(app):
    store = await app.store()
    sid = (await store.ensure_session()).id
    await store.add_message(sid, "user", "a\ud800b")
    stored = await store.session_messages(sid)
    assert stored[-1].content == "a\ufffdb"


async def test_open_returns_each_calls_status_as_the_turn_saw_it(app, fake):
    """A refused and a failed call come back refused and failed (the conversation view shows
    them so after a reload), a call that ran comes back done."""
    (app.root / "notes.txt").write_text("milk\n")
    fake.push(
        {
            "tool_calls": [
                {"name": "bash", "arguments": {"command": "rm -rf notes.txt"}},
                {"name": "read", "arguments": {"path": "missing.txt"}},
                {"name": "read", "arguments": {"path": "notes.txt"}},
            ]
        }
    )
    fake.push({"text": "one of three"})
    rt = Runtime(app, compose.plugins())
    summary = await rt.run(TurnRequest(prompt="look around"))  # discussion: no bash
    assert summary.status == "done"
    view = await session_open(app, OpenParams(session=summary.session))
    calls = [i for i in view.turns[-1].items if i.kind == "tool"]
    assert [(c.name, c.status) for c in calls] == [
        ("bash", "refused"),
        ("read", "failed"),
        ("read", "done"),
    ]
    assert (app.root / "notes.txt").exists()
