"""`ndomo run` and `ndomo health` against a real llama.cpp `llama-server` (SmolLM2-135M,
`--jinja`, a 2,048-token context), through a relay that records what ndomo sent and what the
server answered.

The model is too small to call tools well: these tests check the wire (the window learned
from `/props`, a request that fits it, streaming, the output cap, what health says, tools
only where the chat template renders them); the tool-call tests stay on the scripted server.
Without the install (tests/llama/install-llama-server.sh) every test here is skipped, with
the reason in the warnings summary (and fails under NDOMO_NO_SKIP=1, as in CI).
"""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import server_env
from tests.llama.harness import INSTALL, LlamaServer, Recorder, missing, tools_template
from tests.trusting import trust

WHY = missing()
if WHY is not None:
    warnings.warn(f"LLAMA-SERVER TESTS SKIPPED: {WHY}. Run {INSTALL}", stacklevel=1)
pytestmark = pytest.mark.skipif(WHY is not None, reason=f"LLAMA-SERVER TESTS SKIPPED: {WHY}")

CTX = 2048
MODEL = "smollm2"


class Served:
    """A running llama-server and the recorder in front of it."""

    def __init__(self, server: LlamaServer) -> None:
        self.server = server
        self.recorder = Recorder(server.url)
        self.props = server.props()

    @property
    def base_url(self) -> str:
        return f"{self.recorder.url}/v1"

    def close(self) -> None:
        self.recorder.close()
        self.server.stop()


def serve(tmp: Path, name: str, **kw: Any) -> Served:
    server = LlamaServer(tmp / f"{name}.log", ctx=CTX, alias=MODEL, **kw).start()
    try:
        return Served(server)
    except BaseException:
        server.stop()
        raise


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """SmolLM2 with its own chat template, which renders no tools (shared by the module: it
    answers one request at a time, and each run starts with an empty recording)."""
    served = serve(tmp_path_factory.mktemp("llama"), "smollm2")
    try:
        yield served
    finally:
        served.close()


@pytest.fixture(scope="module")
def tooled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """The same model with a ChatML template that renders tools (Qwen2.5's, from llama.cpp's
    own models/templates)."""
    served = serve(tmp_path_factory.mktemp("llama-tools"), "tools", template=tools_template())
    try:
        yield served
    finally:
        served.close()


def workspace(root: Path, **model: Any) -> Path:
    """A trusted project whose `.ndomo/config.yaml` sets these `model.*` keys."""
    (root / ".ndomo").mkdir(parents=True, exist_ok=True)
    settings = {"temperature": 0, "max_output_tokens": 48, **model}
    (root / ".ndomo" / "config.yaml").write_text(json.dumps({"model": settings}))
    return trust(root)


def ndomo(served: Served, *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    env = server_env({"NDOMO_BASE_URL": served.base_url, "NDOMO_MODEL": MODEL})
    return subprocess.run(
        [sys.executable, "-m", "ndomo", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        stdin=subprocess.DEVNULL,
    )


def summary_of(out: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """`ndomo run --json`'s summary: the last thing printed, after the streamed answer."""
    text = out.stdout
    start = 0 if text.startswith("{") else text.rfind("\n{\n") + 1
    assert start > 0 or text.startswith("{"), (text, out.stderr)
    return json.loads(text[start:])


def health(served: Served, ws: Path) -> dict[str, Any]:
    out = ndomo(served, "health", "--json", "--probe-model", "--workspace", str(ws))
    return json.loads(out.stdout)["model"]


class Turn:
    """One `ndomo run` through the recorder: what the user saw, what went over the wire."""

    def __init__(self, served: Served, ws: Path, prompt: str, *args: str) -> None:
        served.recorder.clear()
        self.ws = ws
        self.out = ndomo(served, "run", "--workspace", str(ws), *args, prompt)
        self.chats = served.recorder.chats()
        self.paths = served.recorder.paths()


@pytest.fixture(scope="module")
def greeting(plain: Served, tmp_path_factory: pytest.TempPathFactory) -> Turn:
    """A first turn in a new project, as a user types it."""
    ws = workspace(tmp_path_factory.mktemp("greeting"))
    return Turn(plain, ws, "Say hello to Ada in one short sentence.")


@pytest.fixture(scope="module")
def tooled_turn(tooled: Served, tmp_path_factory: pytest.TempPathFactory) -> Turn:
    """A first craftsman turn where tools are offered: with every tool its mode offers, the
    request is larger than the 2,048-token window."""
    ws = workspace(tmp_path_factory.mktemp("tooled"))
    return Turn(
        tooled, ws, "What does this project do? One sentence.", "--json", "--agent", "craftsman"
    )


# -- the window ------------------------------------------------------------------------------


def test_the_window_is_learned_from_props(plain: Served, greeting: Turn) -> None:
    assert plain.props["default_generation_settings"]["n_ctx"] == CTX
    assert greeting.out.returncode in (0, 4), greeting.out.stderr  # done, or capped at 48
    # asked before the first request, not learned from a failed one
    assert greeting.paths.index("GET /props") < greeting.paths.index("POST /v1/chat/completions"), (
        greeting.paths
    )
    model = health(plain, greeting.ws)
    assert f"context: {CTX} tokens (/props n_ctx)" in model["capabilities"], model
    build = plain.props["build_info"]
    assert model["server"] == f"llama.cpp {build}", model


def test_the_first_request_fits_the_window(tooled_turn: Turn) -> None:
    """ndomo shrinks the request before sending, and the server's own tokenizer agrees it
    fits with room for the answer."""
    out = tooled_turn.out
    assert out.returncode in (0, 4), out.stderr
    assert "to fit the model's context window" in out.stdout + out.stderr
    (chat,) = tooled_turn.chats
    assert chat.status == 200, chat.events or chat.answer
    prompt = chat.usage["prompt_tokens"]
    assert prompt + chat.body["max_tokens"] <= CTX, (prompt, chat.body["max_tokens"])
    assert summary_of(out)["tokens_in"] == prompt  # the turn counts what the server counted


# -- streaming and the output cap -------------------------------------------------------------


def test_a_streamed_answer_arrives(greeting: Turn) -> None:
    (chat,) = greeting.chats
    assert chat.body["stream"] is True
    assert "text/event-stream" in chat.content_type
    assert chat.content_chunks >= 2  # token by token, not one block
    assert chat.text.strip()
    assert chat.text.strip() in greeting.out.stdout  # what the server streamed, the user sees


def test_a_runaway_answer_is_capped_and_explained(plain: Served, tmp_path: Path) -> None:
    ws = workspace(tmp_path, max_output_tokens=16)
    turn = Turn(plain, ws, "Write a long story about a dragon, at least five paragraphs.", "--json")
    summary = summary_of(turn.out)
    (chat,) = turn.chats
    assert chat.body["max_tokens"] == 16
    assert chat.finish_reason == "length"  # the server stopped it at ndomo's cap
    assert chat.usage["completion_tokens"] == 16
    assert turn.out.returncode == 4, summary  # capped, never a normal "done"
    assert summary["status"] == "capped"
    assert "the answer hit the output limit of 16 tokens" in summary["error"]
    assert summary["answer"] == chat.text  # the text so far stays the answer


# -- health ----------------------------------------------------------------------------------


def test_health_reports_the_server(plain: Served, tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    out = ndomo(plain, "health", "--probe-model", "--workspace", str(ws))
    text = out.stdout
    assert f"{plain.base_url} {MODEL} (1 models; '{MODEL}' available)" in text, text
    assert f"server: llama.cpp {plain.props['build_info']}" in text, text
    assert f"context: {CTX} tokens (/props n_ctx)" in text, text


def test_health_reports_a_stopped_server(tmp_path: Path) -> None:
    server = LlamaServer(tmp_path / "stopped.log", ctx=CTX, alias=MODEL).start()
    server.stop()  # its port now refuses connections, as after the user quit it
    env = server_env({"NDOMO_BASE_URL": f"{server.url}/v1", "NDOMO_MODEL": MODEL})
    out = subprocess.run(
        [sys.executable, "-m", "ndomo", "health", "--probe-model", "-w", str(workspace(tmp_path))],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    assert out.returncode != 0
    (model,) = [ln for ln in out.stdout.splitlines() if ln.startswith("model")]
    assert "FAIL" in model and f"{server.url}/v1" in model, out.stdout
    assert "start the model server" in model, out.stdout


# -- tools: only where the chat template renders them -----------------------------------------


def test_no_tools_are_sent_where_the_template_drops_them(plain: Served, greeting: Turn) -> None:
    """SmolLM2-135M's own template renders no tool definitions: llama.cpp would leave the
    request's tools out of the prompt without a word, so ndomo sends none, says why in
    health, and autopilot (which acts through tools) refuses before asking the model."""
    assert plain.props["chat_template_caps"]["supports_tools"] is False
    (chat,) = greeting.chats
    assert "tools" not in chat.body, sorted(chat.body)
    model = health(plain, greeting.ws)
    assert "tools: no (llama.cpp's chat template renders no tools" in model["capabilities"]
    (warning,) = [w for w in model["warnings"] if "does not support tool calling" in w]
    assert "--chat-template-file" in warning
    auto = Turn(plain, greeting.ws, "Add a README.", "--mode", "autopilot")
    assert auto.out.returncode != 0
    assert "chat_template_caps.supports_tools" in auto.out.stdout + auto.out.stderr, auto.out
    assert auto.chats == []


def test_tools_are_sent_where_the_template_renders_them(tooled: Served, tooled_turn: Turn) -> None:
    assert tooled.props["chat_template_caps"]["supports_tools"] is True
    (chat,) = tooled_turn.chats
    assert chat.status == 200
    assert {t["function"]["name"] for t in chat.body["tools"]} >= {"read", "edit", "grep"}
    model = health(tooled, tooled_turn.ws)
    assert not [w for w in model["warnings"] if "tool calling" in w], model


def test_a_server_without_jinja_is_answered_without_tools(tmp_path: Path) -> None:
    """llama-server --no-jinja with a template that renders tools: /props says tools, but a
    request with them fails ("tools param requires --jinja flag", a 500). The turn is asked
    again without tools and answers; health then says why and how to fix it."""
    served = serve(tmp_path, "no-jinja", template=tools_template(), jinja=False)
    try:
        assert served.props["chat_template_caps"]["supports_tools"] is True
        ws = workspace(tmp_path / "ws")
        turn = Turn(served, ws, "Say hello.")
        assert turn.out.returncode in (0, 4), turn.out.stderr
        with_tools, without = turn.chats[0], turn.chats[-1]
        assert "tools" in with_tools.body and with_tools.status == 500
        assert "tools" not in without.body and without.status == 200
        assert without.text.strip() and without.text.strip() in turn.out.stdout
        model = health(served, ws)
    finally:
        served.close()
    assert "requires --jinja flag" in model["capabilities"], model
    assert any("start llama-server with --jinja" in w for w in model["warnings"]), model
