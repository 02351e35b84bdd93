"""The conversation view's file and command cards in a real VS Code (code-server in headless
Chromium): a write's and an apply_patch's card with their diffs and an Open diff that opens
VS Code's diff editor, a command card saying what it ran in ("sandboxed · offline"), and the
approvals' decision lines and a code action's chip still there after the window reloads.

One code-server for the module (test_vscode_real.py's fixtures), a new session per test; the
model is the scripted fake over real HTTP. With NDOMO_DOCS_IMG set (a folder), the view's
screenshots are written there for docs/editors.md.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from tests.editors.test_vscode_real import BASE_SETTINGS, LABELS, WHY, Env, env, pytestmark, vs  # noqa: F401

SHAPES = "def area(w, h):\n    return w + h\n\n\ndef side(a):\n    return a\n"
PATCH = (
    "--- a/shapes.py\n+++ b/shapes.py\n@@ -1,3 +1,3 @@\n def area(w, h):\n-    return w + h\n+    return w * h\n \n"
)

ORIGINAL = ".editor-group-container.active .monaco-diff-editor .editor.original .view-lines"
MODIFIED = ".editor-group-container.active .monaco-diff-editor .editor.modified .view-lines"


def _docs_shot(vs: Env, name: str) -> None:
    """The view as it is now, for docs/editors.md (only when NDOMO_DOCS_IMG names a folder)."""
    folder = os.environ.get("NDOMO_DOCS_IMG")
    if not folder:
        return
    shot = vs.wb.d.screenshot(name, selector=".part.sidebar")
    assert isinstance(shot, Path), shot
    shutil.copyfile(shot, Path(folder) / f"{name}.png")


def test_write_and_patch_cards_show_their_diffs_and_open_the_diff_editor(vs: Env) -> None:
    """A write of a new file: its card says "new file", shows the added lines, and Open diff
    compares nothing with the file; an apply_patch's card (one per file) shows its hunk at the
    changed line, and Open diff compares the file before the patch with the file now."""
    wb = vs.wb
    (vs.ws / "shapes.py").write_text(SHAPES, encoding="utf-8")
    (vs.ws / "notes.txt").unlink(missing_ok=True)
    vs.script(
        {"tool_calls": [{"name": "write", "arguments": {"path": "notes.txt", "content": "first note\nsecond note\n"}}]},
        {"tool_calls": [{"name": "apply_patch", "arguments": {"patch": PATCH}}]},
        {"text": "wrote and patched"},
    )
    wb.open_file("calc.py")
    wb.select_line("return a * b")
    wb.open_chat()
    wb.palette("ndomo: Fix selection with the builder agent")
    wb.wait_chat(".turn:last-child .outcome", regex="^done$")
    write = 'details.tool[data-tool="write"]'
    wb.wait_chat(f"{write} .cardhead a.file", text="notes.txt")
    assert wb.wait_chat(f"{write} .cardhead .filekind", text="new file").strip() == "new file"
    assert wb.wait_chat(f"{write} pre.diff .add", text="second note").strip() == "+ second note"
    patch = 'details.tool[data-tool="apply_patch"]'
    assert wb.wait_chat(f"{patch} .cardhead a.file", text="shapes.py").strip() == "shapes.py"
    assert wb.wait_chat(f"{patch} pre.diff .del", text="return w + h").strip() == "-     return w + h"
    assert wb.wait_chat(f"{patch} pre.diff .add", text="return w * h").strip() == "+     return w * h"
    _docs_shot(vs, "chat-file-cards")

    wb.chat_click(f"{write} .cardhead button", text="Open diff")
    wb.d.call("waitText", selector=".editor-group-container .tab.active", text="notes.txt (ndomo new file)")
    wb.d.call("waitSelector", selector=".editor-group-container.active .monaco-diff-editor")
    wb.d.call("waitText", selector=MODIFIED, text="second note")
    assert "note" not in " ".join(wb.d.call("texts", selector=ORIGINAL))  # nothing before the write

    wb.chat_click(f"{patch} .cardhead button", text="Open diff")
    wb.d.call("waitText", selector=".editor-group-container .tab.active", text="shapes.py (ndomo apply_patch)")
    wb.d.call("waitText", selector=ORIGINAL, text="return w + h")
    wb.d.call("waitText", selector=MODIFIED, text="return w * h")
    # the whole file on both sides, not the hunk alone
    wb.d.call("waitText", selector=ORIGINAL, text="def side(a):")


# The last turn's cards as the user sees them.
CARDS = """(root) => {
  const turn = [...root.querySelectorAll('.turn')].find(t => t.querySelector('.chip:not([hidden])'));
  if (!turn) return null;
  return {
    chip: turn.querySelector('.chip a.file')?.textContent ?? null,
    selected: turn.querySelector('.chip .selected')?.textContent ?? null,
    sandbox: [...turn.querySelectorAll('details.tool[data-tool="bash"] .sandbox')].map(e => e.textContent),
    decisions: [...turn.querySelectorAll('.decision')].map(e => e.textContent),
    order: [...turn.querySelectorAll('.items > .decision, .items > details.tool')].map(e => e.classList.contains('decision') ? 'decision' : e.dataset.tool),
  };
}"""


def test_a_commands_sandbox_state_and_the_decisions_and_chip_after_a_reload(vs: Env) -> None:
    """With sandbox.auto_allow, a command the agent would ask about runs sandboxed and offline
    without asking: its card says "sandboxed · offline" and the turn's line "auto-allowed
    (sandboxed, offline)"; a command that asks for the network is asked, approved once (its
    card: "sandboxed · network"). After Developer: Reload Window the view reads the stored
    history: the same sandbox states, the same decision lines and the code action's chip."""
    # the user's own config file turns sandbox.auto_allow on; a settings change makes the
    # server read its settings again
    user_config = vs.server.root / "xdg-config" / "ndomo" / "config.yaml"
    user_config.parent.mkdir(parents=True, exist_ok=True)
    user_config.write_text("sandbox:\n  auto_allow: true\n", encoding="utf-8")
    try:
        _commands_and_reload(vs)
    finally:
        user_config.unlink()


def _commands_and_reload(vs: Env) -> None:
    wb = vs.wb
    vs.settings(**{"ndomo.modes.default": "discussion"})
    deadline = time.monotonic() + 60
    while "auto-allow" not in wb.status():  # a new session's status says the server has it
        assert time.monotonic() < deadline, wb.status()
        wb.palette("ndomo: New session")
        time.sleep(1)
    vs.script(
        {"tool_calls": [{"name": "bash", "arguments": {"command": "echo offline-card"}}]},
        {"tool_calls": [{"name": "bash", "arguments": {"command": "echo net-card", "network": True}}]},
        {"text": "both ran"},
    )
    wb.open_file("calc.py")
    wb.select_line("return a * b")
    wb.open_chat()
    wb.palette("ndomo: Fix selection with the builder agent")
    wb.wait_chat("#approvals .approval.structured", text="net-card")
    wb.chat_click("#approvals .approval .actions button.primary", text=LABELS["once"])
    wb.wait_chat(".turn:last-child .outcome", regex="^done$")
    want = {
        "chip": "calc.py:6",
        "selected": "return a * b",
        "sandbox": ["sandboxed · offline", "sandboxed · network"],
        "decisions": ["auto-allowed (sandboxed, offline)", "approved once by you"],
        # each decision line right under its command's card
        "order": ["bash", "decision", "bash", "decision"],
    }
    live = wb.chat_eval(CARDS)
    assert live == want, live
    _docs_shot(vs, "chat-decisions")

    wb.palette("Developer: Reload Window")
    wb.d.call("waitSelector", selector='[id="ndomo.ndomo"]')
    wb.wait_status(r"^ndomo: \w+ · \w+")
    wb.open_chat()
    wb.wait_chat(".turn .chip a.file", text="calc.py:6")
    # on the card's summary line: seen with the card closed
    wb.wait_chat('.turn details.tool[data-tool="bash"] summary .sandbox', text="sandboxed · offline")
    deadline = time.monotonic() + 30
    while (reloaded := wb.chat_eval(CARDS)) != want:
        assert time.monotonic() < deadline, reloaded
        time.sleep(0.2)
