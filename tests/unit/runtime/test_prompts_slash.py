"""Prompt assembly order and fault isolation; slash commands for actions; the prose cap."""

from __future__ import annotations

from pathlib import Path

from ndomo import compose
from ndomo.runtime.context import TurnRequest
from ndomo.runtime.prompts import PromptContributor, PromptManager
from ndomo.runtime.runtime import Runtime


class Fixed(PromptContributor):
    def __init__(self, name, priority, text=None, boom=False):
        self.name, self.priority, self.text, self.boom = name, priority, text, boom

    async def contribute(self, ctx):
        if self.boom:
            raise RuntimeError("broken contributor")
        return self.text


async def test_contributors_by_priority_and_a_failing_one_is_skipped():
    pm = PromptManager()
    pm.add(Fixed("late", 90, "LATE"))
    pm.add(Fixed("early", 5, "EARLY"))
    pm.add(Fixed("broken", 50, boom=True))
    pm.add(Fixed("empty", 60, "   "))
    assert await pm.build(object()) == "EARLY\n\nLATE"


async def test_slash_runs_an_action_without_the_model(app, fake):
    rt = Runtime(app, compose.plugins())
    summary = await rt.run(TurnRequest(prompt="/plan list --limit 5"))
    assert summary.status == "done" and summary.payload == []
    bad = await rt.run(TurnRequest(prompt="/plan list --limit many"))
    assert bad.status == "failed" and "limit" in bad.error
    helped = await rt.run(TurnRequest(prompt="/help"))
    names = {c["command"] for c in helped.payload["commands"]}
    assert {"/mode", "/agent", "/new", "/help", "/plan list", "/mode set"} <= names
    assert fake.chat_requests() == []


async def test_discussion_answer_is_trimmed_to_the_prose_cap(app, fake):
    app.settings.modes.discussion_prose_cap = 100
    fake.push({"text": "word " * 100})
    rt = Runtime(app, compose.plugins())
    summary = await rt.run(TurnRequest(prompt="explain", mode="discussion"))
    assert len(summary.answer) < 220 and "prose cap of 100" in summary.answer
    from ndomo.features.sessions import ExportParams, session_export

    exported = await session_export(app, ExportParams(session=summary.session))
    transcript = Path(exported.path).read_text(encoding="utf-8")
    assert (
        transcript.count("word") >= 100
    )  # the stored conversation (and its export) keeps everything
    fake.push({"text": "word " * 100})
    summary = await rt.run(TurnRequest(prompt="explain", mode="brainstorming"))
    assert summary.answer.count("word") == 100
