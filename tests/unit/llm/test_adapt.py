"""Whole turns against servers with limits: real runtime, real store, the fake over HTTP."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ndomo import compose
from ndomo.app import App
from ndomo.llm.budget import json_size
from ndomo.runtime.context import TurnRequest
from ndomo.runtime.host import BaseHost
from ndomo.runtime.runtime import Runtime
from tests.fakes.fake_model import FakeModel, varied_text

# The first request of a turn (messages + tools, compact UTF-8 JSON, the full tool set of the
# mode) stays under this (≈ 2,500-3,300 tokens); docs/performance.md has the table.
CEILING = {("craftsman", "autopilot"): 10_000, ("foreman", "discussion"): 10_000}


async def _app(tmp_path, fake, **model):
    app = App(tmp_path)
    app.settings.model.base_url = fake.url
    app.settings.model.max_retries = 0
    for k, v in model.items():
        setattr(app.settings.model, k, v)
    return app, Runtime(app, compose.plugins())


def _first_size(body: dict) -> int:
    return json_size(body["messages"]) + json_size(body.get("tools", []))


@pytest.mark.parametrize("agent, mode", list(CEILING))
async def test_first_request_size_stays_under_its_ceiling(tmp_path, agent, mode):
    with FakeModel() as fake:
        app, rt = await _app(tmp_path, fake)
        try:
            await rt.run(TurnRequest(prompt="hello", agent=agent, mode=mode), BaseHost())
        finally:
            await app.aclose()
        body = fake.chat_requests()[0]["body"]
    assert body.get("tools"), "the full tool set of the mode is offered"
    assert _first_size(body) < CEILING[(agent, mode)]
    from ndomo.features.health import FIRST_REQUEST_TOKENS
    from ndomo.llm.capabilities import estimate_tokens

    assert (
        estimate_tokens(_first_size(body)) <= FIRST_REQUEST_TOKENS
    )  # what health's Ollama warning assumes


def test_the_shrunk_prompts_keep_their_contracts():
    from ndomo.agents.loader import builtin_agents_dir

    craftsman = (builtin_agents_dir() / "craftsman.md").read_text()
    for phrase in (
        "≤2 files",
        "3–5 files",
        ">5 files",
        "[OUT OF MY DOMAIN]",
        "plan_create",
        "task_create_batch",
        "task_next_for_agent",
        "handback",
        "never weaken or delete a test",
        "Never foreman, guild or sage",
    ):
        assert phrase in craftsman, phrase
    foreman = (builtin_agents_dir() / "foreman.md").read_text()
    for phrase in (
        "never implement",
        "ask_user",
        "≤5 steps",
        "commit_plan",
        "plan_create",
        "task_create_batch",
        "guild (debate, only when the user asks)",
        "Never to smiths, painter, chronicler or inspector",
    ):
        assert phrase in foreman, phrase


async def test_system_prompt_and_tools_are_byte_identical_across_turns(tmp_path):
    with FakeModel() as fake:
        app, rt = await _app(tmp_path, fake)
        try:
            store = await app.store()
            plan = await store.create_plan(
                {"title": "Split config", "overview": "one module per source"}
            )
            await store.create_tasks(
                plan.id, [{"description": "move yaml loading", "files": ["cfg.py"]}]
            )
            state = await rt.session()
            await rt.run(
                TurnRequest(prompt="first", agent="craftsman", mode="autopilot"), BaseHost()
            )
            await store.update_session(
                state.id, committed_plan_id=plan.id
            )  # per-turn guidance appears
            await rt.run(
                TurnRequest(prompt="second", agent="craftsman", mode="autopilot"), BaseHost()
            )
        finally:
            await app.aclose()
        # each turn's first request (autopilot re-prompts the second turn's stop: its plan task is pending)
        one, two = (r["body"] for r in fake.chat_requests()[:2])

    def prefix(b: dict) -> str:
        return json.dumps([b["messages"][0], b["tools"]], ensure_ascii=False, separators=(",", ":"))

    assert prefix(one) == prefix(two)
    assert two["messages"][1] == one["messages"][1]  # the history is sent as it was
    assert "Committed plan" in two["messages"][-1]["content"]


async def test_a_4096_token_server_completes_a_tool_turn(tmp_path):
    (tmp_path / "a.txt").write_text("hello\n")
    with FakeModel(n_ctx=4096, props=True) as fake:
        fake.push({"tool_calls": [{"name": "read", "arguments": {"path": "a.txt"}}]})
        fake.push({"text": "it says hello"})
        app, rt = await _app(tmp_path, fake)
        try:
            summary = await rt.run(
                TurnRequest(prompt="read a.txt", agent="craftsman", mode="autopilot"), BaseHost()
            )
        finally:
            await app.aclose()
        chats = fake.chat_requests()
    assert summary.status == "done", summary
    assert len(chats) == 2 and all(c["body"].get("tools") for c in chats)
    assert any(
        m["role"] == "tool" and "hello" in m["content"] for m in chats[1]["body"]["messages"]
    )


async def test_a_1024_token_server_fails_before_sending_with_a_clear_message(tmp_path):
    with FakeModel(n_ctx=1024, props=True) as fake:
        app, rt = await _app(tmp_path, fake)
        try:
            summary = await rt.run(
                TurnRequest(prompt="hi", agent="craftsman", mode="autopilot"), BaseHost()
            )
        finally:
            await app.aclose()
        assert fake.chat_requests() == []  # nothing was sent
    assert summary.status == "failed"
    assert "does not fit the model's context window" in summary.error
    assert "window of 1024 tokens (reported by the server: /props n_ctx)" in summary.error
    assert "bytes" in summary.error and "model.context_window" in summary.error


async def test_a_context_error_teaches_the_window_and_the_turn_retries_smaller(tmp_path):
    with FakeModel(n_ctx=3500, context_error="openai") as fake:  # no /props: only the error tells
        app, rt = await _app(tmp_path, fake)
        try:
            for i in range(3):  # grow the history past the window
                fake.push({"text": varied_text(3000)})  # history to grow past the window
                summary = await rt.run(
                    TurnRequest(prompt=f"turn {i}", agent="foreman", mode="discussion"), BaseHost()
                )
            store = await app.store()
            caps = await store.model_caps(fake.url, "qwen2.5-coder:7b")
        finally:
            await app.aclose()
    assert summary.status == "done", summary
    assert caps["context_window"] == 3500 and caps["context_source"] == "the server's context error"


async def test_tool_less_model_discussion_answers_without_tools_autopilot_refuses(tmp_path):
    with FakeModel(tools=False) as fake:
        fake.push({"text": "an answer without tools"})
        app, rt = await _app(tmp_path, fake)
        try:
            talk = await rt.run(
                TurnRequest(prompt="hi", agent="foreman", mode="discussion"), BaseHost()
            )
            act = await rt.run(
                TurnRequest(prompt="fix it", agent="craftsman", mode="autopilot"), BaseHost()
            )
        finally:
            await app.aclose()
        chats = fake.chat_requests()
    assert talk.status == "done" and "without tools" in talk.answer
    assert [bool(c["body"].get("tools")) for c in chats] == [
        True,
        False,
    ]  # learned once, then not offered
    assert (
        act.status == "failed"
        and "does not support tool calling" in act.error
        and "autopilot" in act.error
        and "(discussion, brainstorming)" in act.error  # the modes that work without tools
    )
    assert len(chats) == 2  # autopilot refused before sending


def test_second_ndomo_run_does_not_try_streaming_again(tmp_path):
    (tmp_path / "a.txt").write_text("hello\n")
    step = [
        {"tool_calls": [{"name": "read", "arguments": {"path": "a.txt"}}]},
        {"text": "it says hello"},
    ]
    with FakeModel(step + step, stream_tools=False) as fake:
        env = {**os.environ, "NDOMO_BASE_URL": fake.url}
        for _ in range(2):
            out = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "ndomo",
                    "run",
                    "--workspace",
                    str(tmp_path),
                    "--yes",
                    "--agent",
                    "craftsman",
                    "--mode",
                    "autopilot",
                    "read a.txt",
                ],
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert out.returncode == 0, out.stderr
            assert "it says hello" in out.stdout
        with_tools = [c["body"]["stream"] for c in fake.chat_requests() if c["body"].get("tools")]
    # first run: streamed try (empty), then whole; second process remembers: never streams with tools
    assert with_tools == [True, False, False, False, False]
    health = subprocess.run(
        [sys.executable, "-m", "ndomo", "health", "--workspace", str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "streams tool calls: no" in health.stdout


async def test_health_warns_when_ollama_num_ctx_is_below_the_request(tmp_path):
    from ndomo.features.health import HealthParams, health

    with FakeModel(
        models=["qwen2.5-coder:7b"], ollama={"num_ctx": 2048, "context_length": 32768}
    ) as fake:
        app, _ = await _app(tmp_path, fake)
        try:
            report = await health(app, HealthParams())
        finally:
            await app.aclose()
    assert report.model.ok and "context: 2048 tokens (Ollama num_ctx)" in report.model.capabilities
    warning = report.model.warnings[0]
    assert "2048 tokens" in warning and "OLLAMA_CONTEXT_LENGTH" in warning and "num_ctx" in warning


async def test_health_warns_on_ollamas_default_4096(tmp_path):
    from ndomo.features.health import HealthParams, health

    with FakeModel(models=["qwen2.5-coder:7b"], ollama={"context_length": 32768}) as fake:
        app, _ = await _app(tmp_path, fake)
        try:
            report = await health(app, HealthParams())
        finally:
            await app.aclose()
    assert (
        "Ollama default" in report.model.capabilities and "4096 tokens" in report.model.warnings[0]
    )


async def test_health_has_no_ollama_warning_when_num_ctx_is_large(tmp_path):
    from ndomo.features.health import HealthParams, health

    with FakeModel(models=["qwen2.5-coder:7b"], ollama={"num_ctx": 32768}) as fake:
        app, _ = await _app(tmp_path, fake)
        try:
            report = await health(app, HealthParams())
        finally:
            await app.aclose()
    assert report.model.warnings == []


async def test_health_says_when_ollama_reports_no_tool_support(tmp_path):
    from ndomo.features.health import HealthParams, health

    with FakeModel(
        models=["qwen2.5-coder:7b"], ollama={"num_ctx": 32768, "capabilities": ["completion"]}
    ) as fake:
        app, _ = await _app(tmp_path, fake)
        try:
            report = await health(app, HealthParams())
        finally:
            await app.aclose()
    assert "tools: no" in report.model.capabilities
    assert any("does not support tool calling" in w for w in report.model.warnings)


async def test_a_non_streamed_answer_reaches_the_host_as_the_same_turn_events(tmp_path):
    from ndomo.runtime.events import TextDelta, ToolFinished, ToolStarted

    (tmp_path / "a.txt").write_text("hello\n")
    with FakeModel(stream_tools=False) as fake:
        fake.push(
            {"text": "looking", "tool_calls": [{"name": "read", "arguments": {"path": "a.txt"}}]}
        )
        fake.push({"text": "it says hello"})
        app, rt = await _app(tmp_path, fake)
        host = BaseHost()
        try:
            summary = await rt.run(
                TurnRequest(prompt="read a.txt", agent="craftsman", mode="autopilot"), host
            )
        finally:
            await app.aclose()
        streamed = [c["body"]["stream"] for c in fake.chat_requests()]
    assert summary.status == "done" and streamed == [True, False, False]
    kinds = [type(e) for e in host.events]
    texts = "".join(e.text for e in host.events if isinstance(e, TextDelta))
    assert ToolStarted in kinds and ToolFinished in kinds and texts == "lookingit says hello"
