"""`ndomo run` asks the server about itself (/props, /v1/models …) once, not every run:
a second run within the freshness window sends only its chat request; a failed turn makes
the next run ask again."""

from __future__ import annotations

import subprocess
import sys

from tests.e2e.conftest import server_env
from tests.fakes.fake_model import FakeModel


def run(tmp_path, fake: FakeModel, prompt: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ndomo", "run", "--workspace", str(tmp_path), prompt],
        capture_output=True,
        text=True,
        timeout=60,
        env=server_env({"NDOMO_BASE_URL": fake.url}),
    )


def probes(fake: FakeModel) -> list[str]:
    return [r["path"] for r in fake.requests if "chat/completions" not in r["path"]]


def test_a_second_run_does_not_probe_again_and_a_failure_makes_it(tmp_path) -> None:
    with FakeModel(props=True, n_ctx=8192) as fake:
        fake.push({"text": "first answer"})
        first = run(tmp_path, fake, "one")
        assert first.returncode == 0, first.stderr
        asked = probes(fake)
        assert "/props" in asked  # the window came from the server

        fake.push({"text": "second answer"})
        second = run(tmp_path, fake, "two")
        assert second.returncode == 0, second.stderr
        assert "second answer" in second.stdout
        assert probes(fake) == asked  # nothing asked before the second request

        fake.push({"status": 401})  # not retried: the turn fails
        failed = run(tmp_path, fake, "three")
        assert failed.returncode == 1

        fake.push({"text": "fourth answer"})
        fourth = run(tmp_path, fake, "four")
        assert fourth.returncode == 0, fourth.stderr
        assert len(probes(fake)) > len(asked)  # a failure: the server is asked again
