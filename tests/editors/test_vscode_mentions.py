"""Mentions in the conversation view of a real VS Code (code-server, as test_vscode_real.py):
typing `@` in the send box opens the picker (keyboard: arrows, Enter/Tab, Escape); on send each
mention kind reaches the model — a file's UNSAVED text over the disk, a TypeScript symbol from
VS Code's own TypeScript features (its whole declaration), `@problems` with VS Code's JSON
error, the committed plan — and a mention outside the workspace is refused before the model.

Its own module (and code-server): the module fixtures come from test_vscode_real.py.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from tests.editors.test_vscode_real import Env, env, vs  # noqa: F401 - the fixtures
from tests.editors.vscode_harness import CHAT, DriverError

SHAPES = "export class Circle {\n  area(): number {\n    return Math.PI;\n  }\n}\n\nexport const X = 1;\n"
BROKEN = '{\n  "a": 1 "b": 2\n}\n'


def _commit_plan(ws: Path) -> None:
    """The view's current session (the newest) gets a committed plan."""
    from ndomo.store.models import PlanCreate, TaskCreate
    from ndomo.store.store import PlanStore

    async def go() -> None:
        store = await PlanStore.open(ws / ".ndomo" / "ndomo.db", workspace=ws)
        try:
            session = await store.latest_session()
            assert session is not None
            plan = await store.create_plan(PlanCreate(title="Tidy the parser", overview="make it tidy"))
            await store.create_tasks(plan.id, [TaskCreate(description="rename parse_args")])
            await store.update_session(session.id, committed_plan_id=plan.id)
        finally:
            await store.close()

    asyncio.run(go())


def _pick(vs: Env, typed: str, row: str, key: str = "Enter", attempts: int = 6) -> None:
    """Type `typed` in the send box, wait for the picker to select `row`, take it with `key`.
    A provider still starting (TypeScript) answers later: the last character is typed again,
    as a user would, to ask again."""
    d = vs.wb.d
    d.call("type", text=typed)
    for attempt in range(attempts):
        try:
            d.call("frameWaitText", frames=CHAT, selector=".mentions .mention.selected", text=row, timeout=15000)
            break
        except DriverError:
            if attempt == attempts - 1:
                raise
            d.call("press", keys="Backspace")
            d.call("type", text=typed[-1])
    d.call("press", keys=key)
    d.call("frameWaitText", frames=CHAT, selector=".mentions .mention", text=row, gone=True)


def _user(vs: Env, before: int, timeout: float = 90) -> str:
    deadline = time.monotonic() + timeout
    while len(vs.fake.chat_requests()) == before and time.monotonic() < deadline:
        time.sleep(0.1)
    sent = vs.fake.chat_requests()[before:]
    assert sent, "the turn sent no model request"
    return [m["content"] for m in sent[0]["body"]["messages"] if m["role"] == "user"][-1]


def test_each_mention_kind_from_the_send_box_reaches_the_model(vs: Env) -> None:
    (vs.ws / "shapes.ts").write_text(SHAPES, encoding="utf-8")
    (vs.ws / "broken.json").write_text(BROKEN, encoding="utf-8")
    (vs.ws / "notes.md").write_text("the notes on disk\n", encoding="utf-8")
    _commit_plan(vs.ws)
    vs.script({"text": "mentions seen"})
    wb = vs.wb
    # calc.py changed in the editor, not saved
    wb.open_file("calc.py")
    wb.select_line("return a - b")
    wb.d.call("insert", text="    return a + b  # unsaved fix")
    wb.wait_editor_text("unsaved fix")
    # VS Code's JSON features report the missing comma; TypeScript's know the class
    wb.open_file("broken.json")
    wb.d.call("waitSelector", selector=".monaco-editor .squiggly-error")
    wb.open_file("shapes.ts")
    wb.open_chat()
    wb.chat_click("#prompt")
    _pick(vs, "fix @cal", "calc.py")
    _pick(vs, "using @symbol:Circ", "symbol:Circle", key="Tab")
    _pick(vs, ", see @prob", "@problems")
    # arrows move the selection: from @plan down to @problems and back up
    wb.d.call("type", text="and @p")
    wb.d.call("frameWaitText", frames=CHAT, selector=".mentions .mention.selected", text="@plan")
    wb.d.call("press", keys="ArrowDown")
    wb.d.call("frameWaitText", frames=CHAT, selector=".mentions .mention.selected", text="@problems")
    wb.d.call("press", keys="ArrowUp")
    wb.d.call("frameWaitText", frames=CHAT, selector=".mentions .mention.selected", text="@plan")
    wb.d.call("press", keys="Enter")
    _pick(vs, "and @notes", "notes.md")
    # Escape closes the picker and leaves the text as typed
    wb.d.call("type", text="@")
    wb.d.call("frameWaitText", frames=CHAT, selector=".mentions .mention.selected", text="@plan")
    wb.d.call("press", keys="Escape")
    wb.d.call("frameWaitText", frames=CHAT, selector=".mentions .mention", regex=".", gone=True)
    before = len(vs.fake.chat_requests())
    wb.chat_click("#send", text="Send")
    user = _user(vs, before)
    prompt = "fix @calc.py using @symbol:Circle , see @problems and @plan and @notes.md @"
    assert user.startswith(prompt + "\n\n"), user
    assert "Mentioned calc.py:\n```\ndef add(a, b):\n    return a + b  # unsaved fix\n" in user
    assert "return a - b" not in user  # the disk's text lost to the unsaved buffer
    assert "Mentioned symbol Circle (shapes.ts lines 1-5):\n```\n" + SHAPES.split("\n\n")[0] + "\n```" in user
    assert "- broken.json: line 2: error (json" in user, user
    assert "Mentioned the committed plan:" in user and "rename parse_args" in user
    assert "Mentioned notes.md:\n```\nthe notes on disk\n```" in user
    wb.wait_chat(".turn .text", text="mentions seen")


def test_a_mention_outside_the_workspace_is_refused_in_the_view(vs: Env, tmp_path: Path) -> None:
    outside = tmp_path / "secret.txt"
    outside.write_text("canary-outside\n", encoding="utf-8")
    wb = vs.wb
    wb.open_chat()
    before = len(vs.fake.chat_requests())
    wb.chat_send(f"read @{outside}")
    wb.wait_chat(".turn .outcome", text="outside the workspace")
    time.sleep(1)
    assert len(vs.fake.chat_requests()) == before
