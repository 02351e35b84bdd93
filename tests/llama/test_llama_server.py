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
def llama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """SmolLM2 with its own chat template (shared by the module: it answers one request at
    a time, and each test starts with an empty recording)."""
    served = serve(tmp_path_factory.mktemp("llama"), "smollm2")
    try:
        yield served
    finally:
        served.close()


@pytest.fixture
def served(llama: Served) -> Served:
    llama.recorder.clear()
    return llama


def workspace(root: Path, **model: Any) -> Path:
    """A trusted project whose `.ndomo/config.yaml` sets these `model.*` keys."""
    (root / ".ndomo").mkdir(parents=True, exist_ok=True)
    settings = {"temperature": 0, "max_output_tokens": 48, **model}
    (root / ".ndomo" / "config.yaml").write_text(json.dumps({"model": settings}))
    return trust(root)


def ndomo(served: Served, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = server_env({"NDOMO_BASE_URL": served.base_url, "NDOMO_MODEL": MODEL})
    return subprocess.run(
        [sys.executable, "-m", "ndomo", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        stdin=subprocess.DEVNULL,
    )


def run_json(served: Served, ws: Path, prompt: str, *extra: str) -> tuple[int, dict[str, Any]]:
    out = ndomo(served, "run", "--json", "--workspace", str(ws), *extra, prompt)
    assert out.stdout.strip(), out.stderr
    return out.returncode, json.loads(out.stdout)


def health(served: Served, ws: Path) -> dict[str, Any]:
    out = ndomo(served, "health", "--json", "--probe-model", "--workspace", str(ws))
    return json.loads(out.stdout)["model"]


# -- the window ------------------------------------------------------------------------------


def test_the_window_is_learned_from_props(served: Served, tmp_path: Path) -> None:
    n_ctx = served.props["default_generation_settings"]["n_ctx"]
    assert n_ctx == CTX
    ws = workspace(tmp_path)
    code, summary = run_json(served, ws, "Say hello.")
    assert code in (0, 4), summary
    paths = served.recorder.paths()
    # asked before the first request, not learned from a failed one
    assert paths.index("GET /props") < paths.index("POST /v1/chat/completions"), paths
    model = health(served, ws)
    assert f"context: {CTX} tokens (/props n_ctx)" in model["capabilities"], model
    assert model["server"].startswith("llama.cpp"), model


def test_the_first_request_fits_the_window(served: Served, tmp_path: Path) -> None:
    """A craftsman turn's full request (~3,400 tokens by ndomo's estimate) does not fit 2,048:
    ndomo shrinks it before sending, and the real tokenizer agrees it fits with the answer."""
    ws = workspace(tmp_path)
    code, summary = run_json(served, ws, "What does this project do? Answer in one sentence.")
    assert code in (0, 4), summary  # done, or capped by max_output_tokens
    (chat,) = served.recorder.chats()
    assert chat.status == 200, chat.events or chat.answer
    prompt = chat.usage["prompt_tokens"]
    assert prompt + chat.body["max_tokens"] <= CTX, (prompt, chat.body["max_tokens"])
    assert summary["tokens_in"] == prompt  # the turn counts what the server counted


# -- streaming and the output cap -------------------------------------------------------------


def test_a_streamed_answer_arrives(served: Served, tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    out = ndomo(served, "run", "--workspace", str(ws), "Say hello to Ada in one short sentence.")
    assert out.returncode in (0, 4), out.stderr
    (chat,) = served.recorder.chats()
    assert chat.body["stream"] is True
    assert "text/event-stream" in chat.content_type
    assert chat.content_chunks >= 2  # token by token, not one block
    assert chat.text.strip()
    assert chat.text.strip() in out.stdout  # what the server streamed is what the user sees


def test_a_runaway_answer_is_capped_and_explained(served: Served, tmp_path: Path) -> None:
    ws = workspace(tmp_path, max_output_tokens=16)
    code, summary = run_json(
        served, ws, "Write a long story about a dragon, at least five paragraphs."
    )
    (chat,) = served.recorder.chats()
    assert chat.body["max_tokens"] == 16
    assert chat.finish_reason == "length"  # the server stopped it at ndomo's cap
    assert chat.usage["completion_tokens"] == 16
    assert code == 4, summary  # capped, never a normal "done"
    assert summary["status"] == "capped"
    assert "the answer hit the output limit of 16 tokens" in summary["error"]
    assert summary["answer"] == chat.text  # the text so far stays the answer


# -- health ----------------------------------------------------------------------------------


def test_health_reports_the_server(served: Served, tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    out = ndomo(served, "health", "--probe-model", "--workspace", str(ws))
    text = out.stdout
    assert served.base_url in text, text
    assert f"'{MODEL}' available" in text, text
    assert f"context: {CTX} tokens (/props n_ctx)" in text, text
    assert "llama.cpp" in text, text
    model = health(served, ws)
    assert model["ok"] is True


def test_health_reports_a_stopped_server(tmp_path: Path) -> None:
    gone = serve(tmp_path, "stopped")
    gone.server.stop()
    try:
        model = health(gone, workspace(tmp_path))
    finally:
        gone.close()
    assert model["ok"] is False
    assert gone.base_url in model["detail"] or "connect" in model["detail"].lower(), model


# -- tools: only where the chat template renders them -----------------------------------------


def _tools_case(served: Served, tmp_path: Path) -> None:
    renders = served.props["chat_template_caps"]["supports_tools"]
    ws = workspace(tmp_path)
    code, summary = run_json(served, ws, "List the files here.")
    assert code in (0, 4), summary
    chats = served.recorder.chats()
    assert chats and all(c.status == 200 for c in chats)
    assert ("tools" in chats[0].body) is renders, (renders, sorted(chats[0].body))
    model = health(served, ws)
    warned = any("does not support tool calling" in w for w in model["warnings"])
    assert warned is not renders, model
    if not renders:  # autopilot acts through tools: it refuses before sending anything
        served.recorder.clear()
        auto = ndomo(served, "run", "--mode", "autopilot", "--workspace", str(ws), "Add a README.")
        assert auto.returncode != 0
        assert "does not support tool calling" in auto.stdout + auto.stderr, auto
        assert served.recorder.chats() == []


def test_no_tools_are_sent_when_the_template_drops_them(served: Served, tmp_path: Path) -> None:
    """SmolLM2-135M's own template renders no tool definitions (`/props`
    `chat_template_caps.supports_tools` false): tools sent there would never reach the model."""
    assert served.props["chat_template_caps"]["supports_tools"] is False
    _tools_case(served, tmp_path)


def test_tools_are_sent_when_the_template_renders_them(tmp_path: Path) -> None:
    """The same model with a ChatML template that renders tools (Qwen2.5's, from llama.cpp's
    own models/templates): ndomo offers them."""
    served = serve(tmp_path, "tools", template=tools_template())
    try:
        assert served.props["chat_template_caps"]["supports_tools"] is True
        _tools_case(served, tmp_path / "ws")
    finally:
        served.close()
