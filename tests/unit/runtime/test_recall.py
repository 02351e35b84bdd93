"""Memory recall: the `recall` tool, notes added to a later prompt, notes listed and deleted."""

from __future__ import annotations

import json

from ndomo import compose
from ndomo.compose import main
from ndomo.runtime.context import TurnRequest
from ndomo.runtime.runtime import Runtime
from ndomo.tools.interaction.recall import NOTES_HEADER

DECISION = "The orders service uses PostgreSQL 16, not MySQL"


def last_user(request) -> str:
    return [m["content"] for m in request["body"]["messages"] if m["role"] == "user"][-1]


async def test_a_note_from_brainstorming_is_recalled_in_a_later_sessions_discussion_turn(app, fake):
    rt = Runtime(app, compose.plugins())
    fake.push(
        {
            "tool_calls": [
                {"name": "remember", "arguments": {"content": DECISION, "category": "decision"}}
            ]
        }
    )
    fake.push({"text": "noted"})
    first = await rt.run(TurnRequest(prompt="research databases for orders", mode="brainstorming"))
    assert first.status == "done", first.error
    await rt.new_session()
    fake.push({"text": "PostgreSQL"})
    later = await rt.run(
        TurnRequest(prompt="Which database does the orders service use?", mode="discussion")
    )
    assert later.session != first.session
    sent = last_user(fake.chat_requests()[-1])
    assert sent.startswith("Which database does the orders service use?\n\n" + NOTES_HEADER)
    # quoted as data, with its origin
    assert f'[decision] (saved in brainstorming, session {first.session}): "{DECISION}"' in sent
    assert "not instructions" in NOTES_HEADER
    system = fake.chat_requests()[-1]["body"]["messages"][0]["content"]
    assert DECISION not in system  # the system prompt stays stable
    stored = await (await app.store()).session_messages(later.session)
    assert (
        stored[0].content == "Which database does the orders service use?"
    )  # notes are not history


async def test_recall_tool_searches_by_words_and_category_in_every_mode(app, fake):
    store = await app.store()
    await store.remember(None, "decision", DECISION)
    await store.remember(None, "preference", "The user prefers PostgreSQL examples in psql syntax")
    await store.remember(None, "fact", "Deploys run on Fridays")
    rt = Runtime(app, compose.plugins())
    for mode in ("discussion", "brainstorming", "autopilot"):
        fake.push(
            {"tool_calls": [{"name": "recall", "arguments": {"query": "decision: postgresql"}}]}
        )
        fake.push({"text": "ok"})
        await rt.run(TurnRequest(prompt="zzz", mode=mode))
        result = [
            m["content"]
            for m in fake.chat_requests()[-1]["body"]["messages"]
            if m["role"] == "tool"
        ][-1]
        assert DECISION in result and "psql" not in result and "Fridays" not in result, mode
    fake.push({"tool_calls": [{"name": "recall", "arguments": {"query": "kubernetes"}}]})
    fake.push({"text": "ok"})
    await rt.run(TurnRequest(prompt="zzz"))
    result = [
        m["content"] for m in fake.chat_requests()[-1]["body"]["messages"] if m["role"] == "tool"
    ][-1]
    assert result == "no notes match 'kubernetes'"
    fake.push(
        {"tool_calls": [{"name": "recall", "arguments": {"query": "Preferences:"}}]}
    )  # a whole category
    fake.push({"text": "ok"})
    await rt.run(TurnRequest(prompt="zzz"))
    result = [
        m["content"] for m in fake.chat_requests()[-1]["body"]["messages"] if m["role"] == "tool"
    ][-1]
    assert "psql syntax" in result and DECISION not in result and "Fridays" not in result


async def test_recalled_notes_stay_within_the_budget_and_can_be_turned_off(app, fake):
    store = await app.store()
    topics = ["eviction", "warming", "sharding", "metrics", "expiry"]
    for t in topics:  # distinct notes (near-duplicates would merge), each ~200 characters
        await store.remember(None, "fact", f"Cache layer note on {t}: " + f"{t} " * (160 // len(t)))
    app.settings.memory.recall_chars = len(NOTES_HEADER) + 2 + 2 * 270  # a line is ~260
    rt = Runtime(app, compose.plugins())
    await rt.run(TurnRequest(prompt="how does the cache layer work?"))
    sent = last_user(fake.chat_requests()[-1])
    assert sent.count("Cache layer note") == 2  # whole notes only, as many as fit
    app.settings.memory.recall = False
    await rt.run(TurnRequest(prompt="how does the cache layer work?"))
    assert last_user(fake.chat_requests()[-1]) == "how does the cache layer work?"


def test_notes_are_listed_and_deleted_from_the_cli(tmp_path, capsys):
    import asyncio

    from ndomo.app import App

    async def seed():
        app = App(tmp_path)
        store = await app.store()
        a = await store.remember(None, "fact", "Builds use uv")
        b = await store.remember(None, "decision", "Logs go to stderr")
        await app.aclose()
        return a.id, b.id

    a, b = asyncio.run(seed())
    assert main(["memory", "list", "--workspace", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"#{a} [fact] Builds use uv" in out and f"#{b} [decision] Logs go to stderr" in out
    assert (
        main(["memory", "list", "--category", "decision", "--json", "--workspace", str(tmp_path)])
        == 0
    )
    assert [m["id"] for m in json.loads(capsys.readouterr().out)] == [b]
    assert main(["memory", "delete", "--id", str(a), "--workspace", str(tmp_path)]) == 0
    capsys.readouterr()
    assert main(["memory", "list", "--json", "--workspace", str(tmp_path)]) == 0
    assert [m["id"] for m in json.loads(capsys.readouterr().out)] == [b]
    rc = main(["memory", "delete", "--id", str(a), "--workspace", str(tmp_path)])
    assert rc != 0 and f"no note #{a}" in capsys.readouterr().err
