"""`ndomo run` against a model that never stops on its own (about 1,000 tokens/s): the turn
ends at the output cap within seconds and says why; a model that loops is stopped sooner."""

from __future__ import annotations

import subprocess
import sys
import time

from tests.e2e.conftest import server_env
from tests.fakes.fake_model import FakeModel


def run(tmp_path, fake: FakeModel) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    out = subprocess.run(
        [sys.executable, "-m", "ndomo", "run", "--workspace", str(tmp_path), "say hello"],
        capture_output=True,
        text=True,
        timeout=90,
        env=server_env({"NDOMO_BASE_URL": fake.url}),
    )
    return out, time.monotonic() - started


def test_a_model_that_never_stops_is_cut_at_the_output_cap(tmp_path):
    # 4 tokens every 4 ms: ~1,000 tokens/s, text that never repeats, until the request's cap
    with FakeModel(script=[{"runaway": "varied", "chunk_delay": 0.004}]) as fake:
        out, took = run(tmp_path, fake)
        sent = fake.chat_requests()[0]["body"]
    assert sent["max_tokens"] == 8192  # model.max_output_tokens' default
    assert out.returncode == 4, out.stderr  # capped, never a normal "done"
    assert "the answer hit the output limit of 8192 tokens" in out.stdout + out.stderr
    assert "[done]" not in out.stdout
    assert took < 60


def test_a_model_that_loops_is_stopped_and_says_so(tmp_path):
    with FakeModel(
        script=[{"runaway": "repeat", "text": "I'm glad you're here. ", "chunk_delay": 0.004}]
    ) as fake:
        out, took = run(tmp_path, fake)
        assert fake.wait_for_disconnect(10)  # the request was closed at once
    assert out.returncode == 4, out.stderr
    assert "the model repeated itself; stopped" in out.stdout + out.stderr
    assert took < 30
