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


LAZY = """
import asyncio, sys, tempfile
from pathlib import Path
from ndomo import compose
from ndomo.app import App
from ndomo.runtime.context import TurnRequest
from ndomo.runtime.runtime import Runtime

ACTION_MODULES = ("ndomo.features.health", "ndomo.plan.actions", "ndomo.features.sessions")

async def main(url):
    plugins = compose.plugins()
    loaded = [m for m in ACTION_MODULES if m in sys.modules]
    print("after plugins:", loaded)
    with tempfile.TemporaryDirectory() as d:
        app = App(Path(d))
        app.settings.model.base_url = url
        app.settings.model.max_retries = 0
        try:
            summary = await Runtime(app, plugins).run(TurnRequest(prompt="hello"))
            print("turn:", summary.status, [m for m in ACTION_MODULES if m in sys.modules])
            summary = await Runtime(app, plugins).run(TurnRequest(prompt="/plan list"))
            print("slash:", summary.status, all(m in sys.modules for m in ACTION_MODULES))
        finally:
            await app.aclose()

asyncio.run(main(sys.argv[1]))
"""


def test_a_prompt_that_is_no_slash_command_never_imports_the_action_modules(fake):
    """The action-backed `/` commands are built on the first lookup: `ndomo run "…"` and a
    server's first ordinary turn do not import every action's module; `/plan list` does,
    and runs."""
    import os
    import subprocess
    import sys

    fake.push({"text": "hi"})
    done = subprocess.run(
        [sys.executable, "-c", LAZY, fake.url],
        capture_output=True, text=True, timeout=120, env=os.environ.copy(),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "after plugins: []",
        "turn: done []",
        "slash: done True",
    ], done.stdout + done.stderr


def test_a_registered_command_wins_over_a_later_one_of_the_same_name():
    from ndomo.runtime.slash import CommandSpec, SlashCommandRegistry

    async def mine(ctx, args):
        return "mine"

    async def theirs(ctx, args):
        return "theirs"

    reg = SlashCommandRegistry()
    built: list[str] = []

    def later():
        built.append("built")
        return [CommandSpec("help", theirs, "theirs"), CommandSpec("plan list", theirs, "list")]

    reg.later(later)
    reg.add(CommandSpec("help", mine, "mine"))
    assert built == []  # nothing looked up yet
    assert reg.has("plan list") and built == ["built"]
    assert reg.resolve(["help"])[0].handler is mine
    assert [s.name for s in reg.specs()] == ["help", "plan list"]
    assert reg.has("help") and built == ["built"]  # built once
