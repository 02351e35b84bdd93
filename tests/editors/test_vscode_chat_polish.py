"""The conversation view's polish in a real VS Code (code-server in headless Chromium), as a
user meets it: the welcome panel of an empty session (agents, modes, model, trust, example
prompts), the "↓ New messages" pill when the log is scrolled up, Stop dim when idle and
prominent while a turn runs (on the Send line), the view's badge for a code action's turn that
arrives while the view is hidden, the chip naming that turn's file, lines and selected text,
and a call refused by the mode offering "Switch to … and retry".

The module shares test_vscode_real.py's set-up (one code-server for the module, a new
session per test) through its fixtures; the model is the scripted fake over real HTTP.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from tests.editors import test_vscode_real as real
from tests.editors.test_vscode_real import Env

# test_vscode_real's module-wide code-server and per-test clean start, and its skip marks
env, vs, pytestmark = real.env, real.vs, real.pytestmark

PILL = """(root) => {
  const p = document.getElementById('newmessages'); return !!p && !p.hidden && p.offsetHeight > 0;
}"""
AT_END = """(root) => {
  const l = document.getElementById('log'); return l.scrollHeight - l.scrollTop - l.clientHeight < 40;
}"""
OUTCOMES = (
    "(root) => [...root.querySelectorAll('.turn .outcome')].map(e => e.textContent).join('|')"
)
STOP = """(root) => {
  const stop = document.getElementById('stop'), send = document.getElementById('send');
  return { disabled: stop.disabled, running: stop.classList.contains('running'),
    opacity: Number(getComputedStyle(stop).opacity), sameLine: stop.offsetTop === send.offsetTop };
}"""
# the ndomo container's badge in the activity bar
BADGE = '.activitybar .action-item:has([aria-label^="ndomo"]) .badge-content'


def _until(wb, js: str, want: object = True, timeout: float = 60) -> object:
    deadline = time.monotonic() + timeout
    while True:
        got = wb.chat_eval(js)
        if got == want:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"{js} gave {got!r}, not {want!r}")
        time.sleep(0.2)


def test_an_empty_session_welcomes_then_new_messages_below_the_fold_show_a_pill(
    vs: Env, tmp_path: Path
) -> None:
    """The welcome names the agents and modes with what they do, the model and the folder's
    trust; an example prompt fills the send box. With the log scrolled up, an answer streaming
    in shows "↓ New messages", which scrolls to the end and goes; Stop is dim and disabled
    while idle, the primary button while a turn runs, on the Send line either way."""
    wb = vs.wb
    wb.open_chat()
    wb.wait_chat(".welcome h3", text="Welcome to ndomo")
    text = wb.wait_chat(".welcome", text="This folder: trusted")
    assert "Model:" in text and "foreman" in text and "discussion" in text, text
    example = wb.chat_eval("(root) => root.querySelector('.welcome button.example').textContent")
    wb.chat_click(".welcome button.example")
    assert wb.chat_eval("(root) => document.getElementById('prompt').value") == example
    idle = wb.chat_eval(STOP)
    assert idle["disabled"] and not idle["running"] and idle["opacity"] < 1 and idle["sameLine"], (
        idle
    )

    long = "\n\n".join(f"Paragraph {i} of a long answer." for i in range(60))
    gate = tmp_path / "go"
    vs.script(
        {"text": long},
        {"text": "the first half, then the rest", "chunks": 2, "hold_until": str(gate)},
    )
    wb.chat_send("a long answer please")
    wb.wait_chat(".turn .outcome", regex="^done$")
    wb.wait_chat(".welcome h3", text="Welcome", gone=True)  # the session has a turn now
    wb.chat_eval("(root) => { document.getElementById('log').scrollTop = 0; return true; }")
    assert wb.chat_eval(PILL) is False
    wb.chat_send("and another")
    wb.wait_chat(".turn .text", text="the first half")
    _until(wb, PILL)  # new content below the visible part: the pill
    assert wb.chat_eval(AT_END) is False
    running = wb.chat_eval(STOP)
    assert (
        not running["disabled"]
        and running["running"]
        and running["opacity"] == 1
        and running["sameLine"]
    ), running
    print(f"screenshot: {wb.d.screenshot('pill')}")
    wb.chat_click("#newmessages", text="New messages")
    _until(wb, AT_END)
    _until(wb, PILL, False)
    gate.touch()
    wb.wait_chat(".turn .outcome", regex="^done$")
    wb.wait_status(r"^ndomo: foreman · discussion$")


def test_a_code_action_turn_badges_the_hidden_view_and_names_its_file_lines_and_text(
    vs: Env,
) -> None:
    """A code action's turn while the view is hidden (another side bar shows): the ndomo icon
    gets a badge, gone once the view shows; the turn's prompt has a chip `calc.py:2` with the
    selected text, whose link opens calc.py with those lines selected. A turn that changed
    nothing shows no file count in the status."""
    vs.script({"text": "it subtracts; it should add"})
    wb = vs.wb
    wb.open_chat()
    wb.palette("View: Show Explorer")
    wb.open_file("calc.py")
    wb.select_line("return a - b")
    wb.code_action("ndomo: Fix with craftsman")
    assert wb.d.call("waitText", selector=BADGE, regex=r"^1$") == "1"
    wb.wait_status(r"^ndomo: foreman · discussion$")  # the turn ended
    assert "files changed" not in wb.status()
    wb.open_chat()
    wb.d.call("waitText", selector=BADGE, regex=r"^1$", gone=True)
    chip = wb.wait_chat(".turn .chip", text="calc.py:2")
    assert "return a - b" in chip, chip
    assert "files changed" not in wb.wait_chat("#head", regex=r"foreman")
    wb.close_all_editors()
    wb.chat_click(".turn .chip a.file", text="calc.py:2")
    wb.d.call("waitText", selector=".editor-group-container .tab", text="calc.py")
    assert "return a - b" in wb.editor_text()
    print("cursor after the chip's link:", wb.cursor())


def test_a_call_the_mode_refuses_offers_switch_and_retry(vs: Env) -> None:
    """discussion refuses `write`; once the turn ended its card offers "Switch to <mode> and
    retry", which sets the mode and sends the prompt again: the write runs this time."""
    target = vs.ws / "retry-note.txt"
    write = {
        "tool_calls": [
            {"name": "write", "arguments": {"path": "retry-note.txt", "content": "noted\n"}}
        ]
    }
    vs.script(write, {"text": "I may not write here"}, write, {"text": "written"})
    wb = vs.wb
    wb.open_chat()
    # the craftsman changes code (the foreman plans, in any mode), here in discussion mode
    wb.chat_eval(
        "(root) => { const s = document.getElementById('agent'); s.value = 'craftsman';"
        " s.dispatchEvent(new Event('change')); return true; }"
    )
    wb.wait_status(r"craftsman · autopilot")  # its default mode
    wb.chat_eval(
        "(root) => { const s = document.getElementById('mode'); s.value = 'discussion';"
        " s.dispatchEvent(new Event('change')); return true; }"
    )
    wb.wait_status(r"craftsman · discussion")
    try:
        wb.chat_send("note it down")
        wb.wait_chat("details.tool.refused .status", regex="discussion mode.*switch to")
        wb.wait_chat(".turn .outcome", regex="^done$")
        label = wb.wait_chat(
            "details.tool.refused button.retry", regex=r"^Switch to \w+ and retry$"
        )
        mode = label.split()[2]
        wb.chat_click("details.tool.refused button.retry")
        wb.wait_chat("#head", text=f"craftsman · {mode}")
        wb.wait_chat("details.tool.done .name", text="write")
        _until(wb, OUTCOMES, "done|done")
        prompts = wb.chat_eval(
            "(root) => [...root.querySelectorAll('.turn .prompt')].map(e => e.textContent)"
        )
        assert prompts == ["note it down", "note it down"], prompts
        assert target.exists()  # created; its text is in the editor's buffer, saved by the user
        if wb.chat_eval(AT_END):
            _until(wb, PILL, False)  # everything in sight: no pill
        bodies = [json.dumps(r["body"]["messages"][-1]) for r in vs.fake.chat_requests()]
        assert sum("note it down" in b for b in bodies) >= 2
    finally:
        target.unlink(missing_ok=True)
