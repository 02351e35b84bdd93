"""Mentions in `ndomo.turn` (the chat views' and any LSP client's turn): the editor's resolved
list (a file with its unsaved text, a symbol, the problems, the plan) and the prompt's own
`@path` / `@plan` words reach the model under the prompt, cut visibly past the budget; a
mention outside the workspace is the request's error and nothing is sent."""

from __future__ import annotations

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.uris import from_fs_path

from tests.e2e.conftest import command
from tests.e2e.editor_support import seed_plan
from tests.fakes.fake_model import FakeModel

DISK = "def add(a, b):\n    return a - b\n"
UNSAVED = "def add(a, b):\n    return a + b  # unsaved fix\n"


def _user(fake: FakeModel, i: int = -1) -> str:
    messages = fake.chat_requests()[i]["body"]["messages"]
    return [m["content"] for m in messages if m["role"] == "user"][-1]


async def _commit_plan(ws, session: str) -> None:
    from ndomo.store.store import PlanStore

    slug, _ = await seed_plan(ws, [{"description": "rename parse_args"}], title="Tidy the parser")
    store = await PlanStore.open(ws / ".ndomo" / "ndomo.db", workspace=ws)
    try:
        plan = await store.get_plan(slug)
        await store.update_session(session, committed_plan_id=plan.id)
    finally:
        await store.close()


def _range(start: int, end: int) -> dict:
    return {"start": {"line": start, "character": 0}, "end": {"line": end, "character": 0}}


async def test_each_mention_kind_reaches_the_model_and_the_unsaved_text_wins(lsp, tmp_path):
    ws = tmp_path
    (ws / "calc.py").write_text(DISK, encoding="utf-8")
    (ws / "notes.md").write_text("the notes on disk\n", encoding="utf-8")
    (ws / "shapes.py").write_text(
        "import math\n\n\nclass Circle:\n    def area(self):\n        return math.pi\n\n\nX = 1\n",
        encoding="utf-8",
    )
    (ws / "open.py").write_text("on disk only\n", encoding="utf-8")
    with FakeModel(script=[{"text": "ok"}]) as fake:
        client = await lsp.start(ws, env={"NDOMO_BASE_URL": fake.url})
        # a buffer the editor has open with unsaved text, mentioned without its text: the
        # server's copy of the buffer wins over the disk
        client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=from_fs_path(str(ws / "open.py")),
                    language_id="python",
                    version=2,
                    text="in the open buffer\n",
                )
            )
        )
        session = (await command(client, "ndomo.status", {}))["session"]
        await _commit_plan(ws, session)
        prompt = (
            "fix @calc.py using @symbol:Circle, see @problems, @plan, @notes.md, @open.py, "
            "mail me@example.com"
        )
        mentions = [
            {"kind": "file", "path": "calc.py", "text": UNSAVED},
            {"kind": "file", "path": from_fs_path(str(ws / "open.py"))},
            {
                "kind": "symbol",
                "name": "Circle",
                "path": str(ws / "shapes.py"),
                "range": _range(3, 6),
            },
            {
                "kind": "problems",
                "items": [
                    {
                        "path": str(ws / "calc.py"),
                        "range": _range(1, 1),
                        "severity": 1,
                        "message": "Operator '-' looks wrong",
                        "source": "pyright",
                        "code": "reportGeneralTypeIssues",
                    }
                ],
            },
            {"kind": "plan"},
        ]
        result = await command(client, "ndomo.turn", {"prompt": prompt, "mentions": mentions})
        assert result["status"] == "done", result
        user = _user(fake)
        view = await command(client, "ndomo.session.open", {})

    assert user.startswith(prompt + "\n\n"), user
    assert f"Mentioned calc.py:\n```\n{UNSAVED.rstrip()}\n```" in user
    assert "return a - b" not in user  # the disk's text lost to the unsaved buffer
    assert "Mentioned open.py:\n```\nin the open buffer\n```" in user
    assert "on disk only" not in user
    assert (
        "Mentioned symbol Circle (shapes.py lines 4-6):\n```\nclass Circle:\n"
        "    def area(self):\n        return math.pi\n```"
    ) in user
    assert "import math" not in user and "X = 1" not in user
    assert (
        "Mentioned the editor's problems:\n```\n- calc.py: line 2: error "
        "(pyright reportGeneralTypeIssues): Operator '-' looks wrong\n```"
    ) in user
    assert "Mentioned the committed plan:" in user and "rename parse_args" in user
    assert user.count("Mentioned the committed plan:") == 1  # the word and the list: once
    assert (
        "Mentioned notes.md:\n```\nthe notes on disk\n```" in user
    )  # a word alone: the server reads it
    assert user.count("Mentioned calc.py") == 1 and user.count("Mentioned open.py") == 1
    # the turn's recorded prompt is what the user typed; the mentioned text is the model's
    assert view["turns"][-1]["prompt"] == prompt


async def test_a_plain_client_gets_its_words_expanded_and_a_big_mention_is_cut_visibly(
    lsp, tmp_path
):
    big = "".join(f"line {i:05d} of a long file\n" for i in range(3000))  # 78,000 characters
    (tmp_path / "big.txt").write_text(big, encoding="utf-8")
    (tmp_path / "b.txt").write_text("b" * 30_000 + "\n", encoding="utf-8")
    with FakeModel(script=[{"text": "ok"}]) as fake:
        client = await lsp.start(tmp_path, env={"NDOMO_BASE_URL": fake.url})
        # three big texts: each within its share, all within the budget, each cut says so
        result = await command(
            client,
            "ndomo.turn",
            {
                "prompt": "read @big.txt and @b.txt",
                "mentions": [{"kind": "file", "path": "c.txt", "text": "c" * 30_000}],
            },
        )
        assert result["status"] == "done", result
        user = _user(fake)
    assert "line 00000 of a long file" in user and "line 02999" not in user
    assert "[cut: big.txt is 78,000 characters; lines 1-" in user
    assert "[cut: c.txt is 30,000 characters; lines 1-1 of 1 shown" in user
    assert "[cut: b.txt is 30,001 characters; lines 1-1 of 1 shown" in user
    # the shared budget: the third gets what is left of 60,000 characters
    assert user.count("b") < 13_000 and len(user) < 62_000


@pytest.mark.parametrize("how", ["list", "word", "uri"])
async def test_a_mention_outside_the_workspace_is_refused_before_the_model(lsp, tmp_path, how):
    ws = tmp_path / "ws"
    ws.mkdir()
    outside = tmp_path / "secret.txt"
    outside.write_text("canary-outside\n", encoding="utf-8")
    params: dict = {"prompt": f"read @{outside}"} if how == "word" else {"prompt": "read it"}
    if how == "list":
        params["mentions"] = [{"kind": "file", "path": "../secret.txt"}]
    elif how == "uri":
        params["mentions"] = [
            {
                "kind": "symbol",
                "name": "x",
                "path": from_fs_path(str(outside)),
                "range": _range(0, 0),
            }
        ]
    with FakeModel(script=[{"text": "ok"}]) as fake:
        client = await lsp.start(ws, env={"NDOMO_BASE_URL": fake.url})
        with pytest.raises(JsonRpcException) as err:
            await command(client, "ndomo.turn", params)
        assert fake.chat_requests() == []
    assert "is outside the workspace" in str(err.value)
    assert "canary-outside" not in str(err.value)
