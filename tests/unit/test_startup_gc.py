"""The collector is off while a command starts and back on (start-up's heap frozen) by the
time its work runs: `ndomo run`'s turn, the language server after its warm-up, ACP from the
start. Each in a fresh interpreter (the test process's own collector is not touched)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest


def _python(code: str, *args: str, env: dict[str, str] | None = None) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True, text=True, timeout=120, env={**os.environ, **(env or {})},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return [line for line in done.stdout.splitlines() if line.startswith("seen")]


def test_hold_and_release():
    seen = _python(
        """
        import gc
        from ndomo import startup
        startup.hold(); print("seen held", gc.isenabled())
        startup.release(); print("seen released", gc.isenabled(), gc.get_freeze_count() > 0)
        startup.release(); print("seen again", gc.isenabled())
        gc.disable(); startup.hold(); startup.release()
        print("seen a caller's choice kept", gc.isenabled())
        """
    )
    assert seen == [
        "seen held False",
        "seen released True True",
        "seen again True",
        "seen a caller's choice kept False",
    ]


def test_ndomo_run_runs_its_turn_with_the_collector_on(fake, tmp_path):
    fake.push({"text": "hello there"})
    seen = _python(
        """
        import gc, sys
        from ndomo import compose
        from ndomo.runtime.runtime import Runtime

        real = Runtime.run

        async def run(self, request, host=None):
            print("seen turn", gc.isenabled(), gc.get_freeze_count() > 1000, flush=True)
            return await real(self, request, host)

        Runtime.run = run
        print("seen start", gc.isenabled())
        code = compose.main(["run", "--workspace", sys.argv[1], "hi"])
        print("seen exit", code, gc.isenabled())
        """,
        str(tmp_path),
        env={"NDOMO_BASE_URL": fake.url},
    )
    assert seen == ["seen start True", "seen turn True True", "seen exit 0 True"], seen


async def test_the_server_turns_the_collector_back_on_after_its_warm_up(monkeypatch):
    import gc

    from ndomo import startup
    from ndomo.lsp import lifecycle, warmup

    calls: list[str] = []
    monkeypatch.setattr(warmup, "extras", lambda: calls.append("extras"))
    monkeypatch.setattr(startup, "release", lambda: calls.append("release"))

    def broken() -> None:
        calls.append("extras")
        raise RuntimeError("a feature module failed to import")

    life = lifecycle.LifecycleFeature.__new__(lifecycle.LifecycleFeature)
    await life._warm([])
    monkeypatch.setattr(warmup, "extras", broken)
    with pytest.raises(RuntimeError):
        await life._warm([])
    assert calls == ["extras", "release", "extras", "release"]
    assert gc.isenabled()
