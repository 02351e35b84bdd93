"""What a process's start does not import: httpx's command-line client (click, pygments)."""

from __future__ import annotations

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
