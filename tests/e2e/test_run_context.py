"""`ndomo run` with context in and usage out: `@path` adds a file's text (cut visibly past its
budget), `@plan` the session's committed plan, a mention outside the workspace is refused; the
turn's and the session's tokens (and the cost, with `model.price`) end the output."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

from tests.e2e.conftest import server_env
from tests.e2e.editor_support import seed_plan
from tests.fakes.fake_model import FakeModel
from tests.trusting import trust


def run(ws: Path, fake: FakeModel, *args: str, env: dict[str, str] | None = None):
    return subprocess.run(
        [sys.executable, "-m", "ndomo", "run", "--workspace", str(ws), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=server_env({"NDOMO_BASE_URL": fake.url, **(env or {})}),
    )


def _user(fake: FakeModel, i: int = -1) -> str:
    messages = fake.chat_requests()[i]["body"]["messages"]
    return [m["content"] for m in messages if m["role"] == "user"][-1]


def _usage(fake: FakeModel, i: int) -> tuple[int, int]:
    # the fake's own count, as it reported it in its answer (tests/fakes/fake_model.py)
    req = fake.chat_requests()[i]["body"]
    from tests.fakes.fake_model import prompt_tokens

    return prompt_tokens(req), len("ok") // 4 + 1


def test_the_usage_line_shows_the_turns_and_the_sessions_tokens_and_the_cost(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    config = tmp_path / "config"
    (config / "ndomo").mkdir(parents=True)
    (config / "ndomo" / "config.yaml").write_text(
        "model:\n  price: {input: 3.0, output: 15.0}\n", encoding="utf-8"
    )
    with FakeModel(script=[{"text": "ok"}, {"text": "ok"}]) as fake:
        first = run(ws, fake, "hello", env={"XDG_CONFIG_HOME": str(config)})
        second = run(ws, fake, "again", env={"XDG_CONFIG_HOME": str(config)})
        (p1, c1), (p2, c2) = _usage(fake, 0), _usage(fake, 1)
    assert first.returncode == 0, first.stderr
    line = first.stdout.strip().splitlines()[-1]
    cost1 = (p1 * 3.0 + c1 * 15.0) / 1e6
    assert line == (
        f"tokens: {p1:,} prompt + {c1:,} completion · session {p1:,} + {c1:,} · "
        f"cost ${cost1:.4f} (session ${cost1:.4f})"
    )
    # the same session, the next run: the session's tokens add up (stored, across processes)
    line2 = second.stdout.strip().splitlines()[-1]
    assert line2.startswith(f"tokens: {p2:,} prompt + {c2:,} completion · ")
    assert f"session {p1 + p2:,} + {c1 + c2:,}" in line2

    # --json carries the same figures; without a price there is no cost
    with FakeModel(script=[{"text": "ok"}]) as fake:
        out = run(ws, fake, "--json", "json please")
    summary = json.loads(out.stdout[out.stdout.index("\n{") :])  # after the streamed answer
    usage = summary["usage"]
    assert usage["session"]["prompt"] > p1 + p2 and usage["cost"] is None
    assert usage["turn"]["prompt"] == summary["tokens_in"]


def test_mentions_add_the_file_and_the_plan_and_cut_visibly(tmp_path):
    ws = trust(tmp_path / "ws")
    ws.mkdir()
    (ws / "src").mkdir()
    (ws / "src" / "app.py").write_text("def main():\n    return 42\n", encoding="utf-8")
    big = "".join(f"line {i:05d} of a long file\n" for i in range(3000))  # ~78,000 characters
    (ws / "big.txt").write_text(big, encoding="utf-8")
    with FakeModel(script=[{"text": "ok"}, {"text": "ok"}]) as fake:
        out = run(ws, fake, "explain @src/app.py and @big.txt, mail me@example.com")
        assert out.returncode == 0, out.stderr
        user = _user(fake, 0)
        assert user.startswith("explain @src/app.py and @big.txt, mail me@example.com\n\n")
        assert "Mentioned src/app.py:\n```\ndef main():\n    return 42\n```" in user
        assert "line 00000 of a long file" in user and "line 02999" not in user
        assert "[cut: big.txt is 78,000 characters; lines 1-" in user
        assert "read the rest with the read tool]" in user

        # @plan: the session's committed plan
        slug, _ = asyncio.run(seed_plan(ws, [{"description": "rename parse_args"}]))

        async def commit() -> str:
            from ndomo.store.store import PlanStore

            store = await PlanStore.open(ws / ".ndomo" / "ndomo.db", workspace=ws)
            try:
                session = await store.latest_session()
                plan = await store.get_plan(slug)
                await store.update_session(session.id, committed_plan_id=plan.id)
                return session.id
            finally:
                await store.close()

        session = asyncio.run(commit())
        out = run(ws, fake, "--session", session, "go on with @plan")
        assert out.returncode == 0, out.stderr
        user = _user(fake, 1)
        assert "Mentioned the committed plan:" in user
        assert "Tidy the parser" in user and "rename parse_args" in user

    outside = tmp_path / "secret.txt"
    outside.write_text("canary-outside", encoding="utf-8")
    with FakeModel(script=[{"text": "ok"}]) as fake:
        out = run(ws, fake, f"read @{outside}")
        assert fake.chat_requests() == []  # refused before any request
    assert out.returncode == 2
    assert f"@{outside} is outside the workspace" in out.stderr
