"""What a process's start does not import: httpx's command-line client (click, pygments)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

CHECK = """
import sys
import ndomo
import httpx
from ndomo.llm import transport
client = httpx.AsyncClient()
print(sorted(m for m in ("click", "pygments", "httpx._main") if sys.modules.get(m) is not None))
print(callable(httpx.main))
"""


def test_httpx_loads_without_its_command_line_client():
    done = subprocess.run(
        [sys.executable, "-c", CHECK], capture_output=True, text=True, timeout=60,
        env=os.environ.copy(),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["[]", "True"], done.stdout


# `ndomo run` with the chat request's send wrapped: which of `WATCH` are loaded when it leaves.
AT_SEND = """
import json, os, sys
from ndomo.llm import http

real = http.Client.send
seen = {}

async def send(self, *args, **kwargs):
    if not seen:
        seen.update({m: m in sys.modules for m in sys.argv[1].split(",")})
    return await real(self, *args, **kwargs)

http.Client.send = send
from ndomo.compose import main

code = main(sys.argv[2:])
print(json.dumps(seen))
sys.exit(code)
"""


def test_ndomo_run_sends_its_request_before_loading_pathspec_httpx_or_anyio(tmp_path):
    # pathspec (~10 ms here) matches secret, design and search globs: none is needed for a
    # turn's first request, and `ndomo run`'s start-up is what scripts wait for (issue 31).
    # The model client speaks HTTP through h11 (llm/http.py): httpx (~75 ms) and the anyio
    # it loads at its first connection (~35 ms) are web_fetch's, not a run's.
    from tests.fakes.fake_model import FakeModel

    (tmp_path / ".env").write_text("TOKEN=canary\n")
    step = {"text": "done"}
    watch = "pathspec,httpx,anyio,httpcore,h11"
    with FakeModel([step]) as fake:
        done = subprocess.run(
            [sys.executable, "-c", AT_SEND, watch,
             "run", "--workspace", str(tmp_path), "say hi"],
            capture_output=True, text=True, timeout=120,
            env={**os.environ, "NDOMO_BASE_URL": fake.url},
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == {
        "pathspec": False, "httpx": False, "anyio": False, "httpcore": False, "h11": True,
    }, done.stdout  # fmt: skip


def test_each_glob_user_loads_pathspec_itself(tmp_path):
    # Each in a fresh process: none may count on another having loaded it.
    checks = {
        "secret": "from ndomo.security.paths import is_secret as f; "
        "print(f(R / '.env', [R]), f(R / 'main.py', [R]))",
        "design": "from ndomo.security.control import design_artifact as f; "
        "print(f('docs/a.md', ['docs/']), f('src/a.py', ['docs/']))",
        "glob": "from ndomo.lib.search.patterns import compile_glob as f; "
        "print(f('*.py').match_file('src/a.py'), f('*.py').match_file('a.txt'))",
        "walk": "from ndomo.lib.search.walk import iter_files as f; "
        "print('a.py' in [p.name for p in f(R)], 'skip.py' in [p.name for p in f(R)])",
    }
    (tmp_path / "a.py").write_text("")
    (tmp_path / "skip.py").write_text("")
    (tmp_path / ".gitignore").write_text("skip.py\n")
    for name, code in checks.items():
        done = subprocess.run(
            [sys.executable, "-c", f"from pathlib import Path; R = Path({str(tmp_path)!r}); {code}"],
            capture_output=True, text=True, timeout=60, env=os.environ.copy(),
        )  # fmt: skip
        assert done.returncode == 0, (name, done.stderr)
        assert done.stdout.split() == ["True", "False"], (name, done.stdout)
