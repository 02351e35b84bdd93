"""The conversation view's rendering in a real VS Code (code-server in headless Chromium), as
a user sees it: answers as markdown with highlighted code blocks whose Copy and Insert at
cursor work, a model's raw HTML shown as text, links that open the workspace file at its
line, edit cards with a diff and an Open diff, command cards, and refused and failed tool
calls still shown as such after the window reloads.

The module shares test_vscode_real.py's set-up (one code-server for the module, a new
session per test) through its fixtures; the model is the scripted fake over real HTTP.
"""

from __future__ import annotations

from pathlib import Path

from tests.editors.test_vscode_real import LABELS, WHY, Env, env, pytestmark, vs  # noqa: F401

CODE = "def add(a, b):\n    return a + b\n"
ANSWER = (
    "## Plan\n\n"
    "We *fix* **add** in `calc.py`, see [the mul function](calc.py#L5) and [the docs](https://example.com/docs).\n\n"
    f"```python\n{CODE}```\n\n"
    "<img src=x onerror=\"document.title='pwned'\"> and <script>document.title='pwned'</script>\n\n"
    "[quit](command:workbench.action.quit) [js](javascript:alert(1)) ![logo](https://example.com/logo.png)\n"
)

# What the answer's element holds: elements by tag, highlighted spans, links and their targets.
DOM = """(root) => {
  const turns = [...root.querySelectorAll('.turn')];
  const text = turns.at(-1).querySelector('.text');
  return {
    h2: [...text.querySelectorAll('h2')].map(e => e.textContent),
    em: [...text.querySelectorAll('em')].map(e => e.textContent),
    strong: [...text.querySelectorAll('strong')].map(e => e.textContent),
    inlineCode: [...text.querySelectorAll('p code')].map(e => e.textContent),
    code: [...text.querySelectorAll('.codeblock code')].map(e => e.textContent),
    hljs: [...text.querySelectorAll('.codeblock code span[class^="hljs-"]')].map(e => e.className + ':' + e.textContent),
    keywordColour: (() => { const k = text.querySelector('.hljs-keyword'); return k ? getComputedStyle(k).color : null; })(),
    plainColour: getComputedStyle(text).color,
    buttons: [...text.querySelectorAll('.codeblock button')].map(e => e.textContent),
    links: [...text.querySelectorAll('a')].map(e => [e.textContent, e.dataset.href || null, e.getAttribute('href')]),
    dangerous: text.querySelectorAll('img, script, iframe, [onerror], [onclick]').length,
    paragraphs: [...text.querySelectorAll('p')].map(e => e.textContent),
    title: document.title,
    firstTurn: turns[0] ? turns[0].dataset.mark || null : null,
  };
}"""


def test_an_answer_is_markdown_with_a_highlighted_code_block_that_copies_and_inserts(vs: Env) -> None:
    """Headings, emphasis and inline code rendered; the python block highlighted with the
    theme's colours; Insert at cursor puts it in the active editor, Copy puts it on the
    clipboard (pasted back with Ctrl+V); the model's <img onerror> and <script> are text; a
    command: or javascript: link is no link, an image is not loaded; the file link opens
    calc.py at line 5, the web link is handed to VS Code (which asks before opening it). An earlier turn's element is not redrawn by a later one."""
    wb = vs.wb
    vs.script({"text": "first answer"}, {"text": ANSWER, "chunks": 6, "chunk_delay": 0.05})
    wb.open_chat()
    wb.chat_send("say something")
    wb.wait_chat(".turn .outcome", regex="^done$")
    wb.chat_eval("(root) => { root.querySelector('.turn').dataset.mark = 'kept'; return true; }")
    wb.chat_send("explain the fix")
    wb.wait_chat(".turn .text h2", text="Plan")
    wb.wait_chat(".turn:last-child .outcome", regex="^done$")
    dom = wb.chat_eval(DOM)
    assert dom["h2"] == ["Plan"], dom
    assert dom["em"] == ["fix"] and dom["strong"] == ["add"] and dom["inlineCode"] == ["calc.py"], dom
    assert dom["code"] == [CODE], dom
    assert "hljs-keyword:def" in dom["hljs"] and "hljs-keyword:return" in dom["hljs"], dom
    assert dom["keywordColour"] and dom["keywordColour"] != dom["plainColour"], dom  # the theme's keyword colour
    assert dom["buttons"] == ["Copy", "Insert at cursor"], dom
    # the model's HTML is text: no element, nothing ran
    assert dom["dangerous"] == 0, dom
    assert any("<img src=x onerror=" in p and "<script>" in p for p in dom["paragraphs"]), dom
    assert "pwned" not in dom["title"], dom
    # only the workspace link is a link, and no anchor has an href the webview would follow
    assert dom["links"] == [["the mul function", "calc.py#L5", None], ["the docs", "https://example.com/docs", None]], dom
    assert any("[image: logo]" in p for p in dom["paragraphs"]), dom
    assert dom["firstTurn"] == "kept", "the earlier turn's element was redrawn"

    (vs.ws / "paste.txt").write_text("start\n", encoding="utf-8")
    wb.open_file("paste.txt")
    wb.select_line("start")
    wb.chat_click(".turn .codeblock button", text="Insert at cursor")  # replaces the selection
    wb.wait_editor_text("return a + b")
    wb.wait_editor_text("start", gone=True)
    wb.d.call("click", selector=".editor-group-container.active .monaco-editor .view-line", text="return a + b")
    wb.d.call("press", keys=["Control+a", "Delete"])
    wb.wait_editor_text("return a + b", gone=True)
    wb.chat_click(".turn .codeblock button", text="Copy")
    wb.wait_chat(".turn .codeblock button", text="Copied")
    wb.d.call("click", selector=".editor-group-container.active .monaco-editor .view-line")
    wb.d.call("press", keys="Control+v")
    wb.wait_editor_text("def add(a, b):")
    wb.wait_editor_text("return a + b")

    wb.chat_click(".turn .text a.link", text="the mul function")
    wb.d.call("waitText", selector=".editor-group-container .tab.active", text="calc.py")
    wb.d.call("waitText", selector='[id="status.editor.selection"]', regex=r"^\s*Ln 5, Col 1")
    # a web link goes through the extension to VS Code's openExternal, which asks first
    wb.chat_click(".turn .text a.link", text="the docs")
    assert "example.com" in wb.wait_dialog("example.com")
    wb.dismiss_dialog()


def test_an_edit_card_shows_its_diff_and_opens_the_file_at_the_changed_line(vs: Env) -> None:
    """The command's approval is asked in the view only (no toast to dismiss after answering
    it there). An edit's card: the removed and added lines, the path as a link that opens calc.py with
    the cursor on the changed line (2, not where the selection was), and Open diff opening
    VS Code's diff editor; a failed bash call's card shows its command highlighted, its exit
    code and its output in a collapsible block."""
    wb = vs.wb
    vs.script(
        {"tool_calls": [{"name": "edit", "arguments": {"path": "calc.py", "old_text": "def add(a, b):\n    return a - b",
                                                         "new_text": "def add(a, b):\n    return a + b"}}]},
        {"tool_calls": [{"name": "bash", "arguments": {"command": "echo checked; exit 3"}}]},
        {"text": "fixed"},
    )
    wb.open_file("calc.py")
    wb.select_line("return a * b")
    wb.open_chat()
    wb.palette("ndomo: Fix selection with the builder agent")
    wb.wait_chat("#approvals .approval", text="exit 3")  # the view is on screen: asked there only
    assert not [t for t in wb.toasts() if "exit 3" in t], wb.toasts()
    wb.chat_click("#approvals .approval button", text=LABELS["once"])
    wb.wait_chat("#approvals .approval", text="exit 3", gone=True)
    wb.wait_chat(".turn .outcome", regex="^done$")
    assert not [t for t in wb.toasts() if "exit 3" in t], wb.toasts()  # answered: no toast left
    card = 'details.tool[data-tool="edit"]'
    assert wb.wait_chat(f"{card} pre.diff .del", text="return a - b").strip() == "-     return a - b"
    assert wb.wait_chat(f"{card} pre.diff .add", text="return a + b").strip() == "+     return a + b"
    assert wb.wait_chat(f"{card} .counts", text="+1").strip() == "+1 −1"
    bash = 'details.tool[data-tool="bash"]'
    assert wb.chat_eval(f"(root) => root.querySelector('{bash}').open") is True  # failed: shown open
    wb.wait_chat(f"{bash} .codeblock code", text="echo checked; exit 3")
    assert wb.chat_eval(f"""(root) => root.querySelectorAll('{bash} .codeblock code span[class^="hljs-"]').length""") > 0
    wb.wait_chat(f"{bash} .exit.bad", text="exit code 3")
    wb.chat_click(f"{bash} details.outbox summary", text="output")
    wb.wait_chat(f"{bash} details.outbox .output", text="checked")

    assert wb.cursor().startswith("Ln 6"), wb.cursor()  # where the selection was
    wb.chat_click(f"{card} a.file", text="calc.py")
    wb.d.call("waitText", selector=".editor-group-container .tab.active", text="calc.py")
    wb.d.call("waitText", selector='[id="status.editor.selection"]', regex=r"^\s*Ln 2, Col 1")

    wb.chat_click(f"{card} button", text="Open diff")
    wb.d.call("waitText", selector=".editor-group-container .tab.active", text="calc.py (ndomo edit)")
    wb.d.call("waitSelector", selector=".editor-group-container.active .monaco-diff-editor")
    # the left side is the file before the edit, the right side the file now
    wb.d.call("waitText", selector=".editor-group-container.active .monaco-diff-editor .editor.original .view-lines",
              text="return a - b")
    wb.d.call("waitText", selector=".editor-group-container.active .monaco-diff-editor .editor.modified .view-lines",
              text="return a + b")


# An approval's parts as the view lays them out.
APPROVAL = """(root) => {
  const a = root.querySelector('#approvals .approval.structured');
  if (!a) return null;
  return {
    reason: a.querySelector('.reason')?.textContent ?? null,
    who: a.querySelector('.who')?.textContent ?? null,
    code: [...a.querySelectorAll('.codeblock code')].map(e => e.textContent),
    highlighted: a.querySelectorAll('.codeblock code span[class^="hljs-"]').length,
    primary: [...a.querySelectorAll('.actions > button')].map(b => [b.className, b.textContent]),
    menu: [...a.querySelectorAll('.actions select.more option')].map(o => [o.value, o.textContent]),
    detailsOpen: a.querySelector('details.approval-details')?.open ?? null,
    facts: [...a.querySelectorAll('details.approval-details .fact')].map(f => [f.querySelector('dt').textContent, f.querySelector('dd').textContent]),
  };
}"""


def test_an_approval_is_laid_out_and_each_answer_is_a_line_of_the_turn(vs: Env) -> None:
    """An approval in the view: its reason on one line, the command as a highlighted code block,
    one primary button (Run once), the other answers in a menu saying what each saves, the rule,
    sandbox, network and agent behind Details; no toast while the view shows it. The first is
    answered with the button, the second from the menu (Always); each answer is a line of the turn."""
    wb = vs.wb
    vs.script(
        {"tool_calls": [{"name": "bash", "arguments": {"command": "echo laid-out > laid.txt"}}]},
        {"tool_calls": [{"name": "bash", "arguments": {"command": "touch always.txt"}}]},
        {"text": "both ran"},
    )
    wb.open_file("calc.py")
    wb.select_line("return a * b")
    wb.open_chat()
    wb.palette("ndomo: Fix selection with the builder agent")
    wb.wait_chat("#approvals .approval.structured", text="laid.txt")
    shown = wb.chat_eval(APPROVAL)
    assert shown["reason"] and "\n" not in shown["reason"], shown
    assert shown["who"] == "craftsman wants bash", shown
    assert shown["code"] == ["echo laid-out > laid.txt"] and shown["highlighted"] > 0, shown
    assert shown["primary"] == [["primary", "Run once"]], shown
    values = [v for v, _ in shown["menu"]]
    assert values == ["", "session", "project", "deny", "never"], shown
    always = dict(shown["menu"])["project"]
    assert always.startswith("Always: allow `") and always.endswith("` in this project"), always
    rule = always.split("`")[1]
    assert shown["detailsOpen"] is False, shown
    facts = dict(shown["facts"])
    assert facts["rule"] == f"Always saves `{rule}`" and facts["agent"] == "craftsman (autopilot)", facts
    assert "sandbox" in facts["sandbox"] or "sandboxed" in facts["sandbox"], facts
    assert facts["network"] in ("yes, if allowed", "none"), facts
    assert not [t for t in wb.toasts() if "laid.txt" in t], wb.toasts()  # the view shows it

    wb.chat_click("#approvals .approval .actions button.primary", text="Run once")
    wb.wait_chat("#approvals .approval", text="laid.txt", gone=True)
    wb.wait_chat(".turn:last-child .decision", text="approved once by you")

    wb.wait_chat("#approvals .approval.structured", text="always.txt")
    wb.chat_select("#approvals .approval select.more", "project")
    wb.wait_chat("#approvals .approval", text="always.txt", gone=True)
    wb.wait_chat(".turn:last-child .outcome", regex="^done$")
    decisions = wb.chat_eval("(root) => [...root.querySelectorAll('.turn:last-child .decision')].map(e => e.textContent)")
    assert decisions[0] == "approved once by you", decisions
    assert decisions[1].startswith("always allowed `") and decisions[1].endswith("` in this project by you"), decisions
    assert (vs.ws / "laid.txt").exists() and (vs.ws / "always.txt").exists()
    assert not [t for t in wb.toasts() if "laid.txt" in t or "always.txt" in t], wb.toasts()  # no toast left


def test_refused_and_failed_calls_are_still_so_after_a_reload(vs: Env, tmp_path: Path) -> None:
    """A refused call (bash in discussion) and a failed one (reading a missing file) are shown
    refused and failed live, and again after the window reloads and the view reads the
    session's stored history."""
    wb = vs.wb
    vs.script(
        {"tool_calls": [{"name": "bash", "arguments": {"command": "echo no"}},
                        {"name": "read", "arguments": {"path": "missing.txt"}},
                        {"name": "read", "arguments": {"path": "calc.py", "start_line": 1, "end_line": 2}}]},
        {"text": "could not do two of three"},
    )
    wb.open_chat()
    wb.chat_send("look around")
    wb.wait_chat(".turn .outcome", regex="^done$")

    def check() -> None:
        wb.wait_chat('details.tool.refused[data-tool="bash"] .status', regex="^refused")
        wb.wait_chat('details.tool.failed[data-tool="read"] .status', regex="^failed")
        wb.chat_click('details.tool.done[data-tool="read"] summary .name', text="read")  # collapsed: open it
        wb.wait_chat('details.tool.done[data-tool="read"] a.file', text="calc.py:1–2")

    check()
    wb.palette("Developer: Reload Window")
    wb.d.call("waitSelector", selector='[id="ndomo.ndomo"]')
    wb.wait_status(r"^ndomo: foreman · discussion$")
    wb.open_chat()
    wb.wait_chat(".turn .prompt", text="look around")
    check()


def _wait_eval(wb, js: str, want: object, timeout: float = 60) -> None:
    import time

    deadline = time.monotonic() + timeout
    while (got := wb.chat_eval(js)) != want:
        assert time.monotonic() < deadline, f"{js} is {got!r}, not {want!r}; screenshot: {wb.d.screenshot('eval')}"
        time.sleep(0.2)


def test_a_send_while_a_turn_runs_keeps_the_text_and_adds_no_turn(vs: Env, tmp_path: Path) -> None:
    """While a turn runs, Send is disabled; Ctrl+Enter keeps the text in the box and says why in
    a sentence (no command id), and no failed turn is added; once the turn ends the same text
    is sent with one click and the box clears."""
    gate = tmp_path / "go"
    vs.script({"text": "slow answer, part two", "chunks": 2, "hold_until": str(gate)}, {"text": "second answer"})
    wb = vs.wb
    wb.open_chat()
    wb.chat_send("first question")
    wb.wait_chat(".turn .text", text="slow answer")
    _wait_eval(wb, "(root) => root.querySelector('#send').disabled", True)
    wb.d.call("frameFill", frames=["iframe.webview", "iframe#active-frame"], selector="#prompt", text="second question")
    wb.d.call("press", keys="Control+Enter")
    note = wb.wait_chat("#note", text="still running")
    assert "ndomo." not in note, note
    assert wb.chat_eval("(root) => root.querySelector('#prompt').value") == "second question"
    assert wb.chat_eval("(root) => root.querySelectorAll('.turn').length") == 1
    gate.touch()
    wb.wait_chat(".turn .outcome", regex="^done$")
    _wait_eval(wb, "(root) => root.querySelector('#send').disabled", False)
    wb.wait_chat("#note", text="still running", gone=True)
    wb.chat_click("#send", text="Send")
    wb.wait_chat(".turn .text", text="second answer")
    assert wb.chat_eval("(root) => [...root.querySelectorAll('.turn .prompt')].map(e => e.textContent)") == [
        "first question", "second question"]
    assert wb.chat_eval("(root) => root.querySelector('#prompt').value") == ""
    assert sum("second question" in str(r["body"]["messages"][-1]["content"]) for r in vs.fake.chat_requests()) == 1


THEMED = 'class Shape:\n    """A shape."""\n    sides = 4  # corners\n\n    def area(self, size: float) -> float:\n        return size * 2.5 if True else None\n'

# Every highlighted token's contrast with the code block's background as painted (the
# backgrounds composited from the page up to the block), WCAG's formula.
CONTRAST = """(root) => {
  const rgba = (s) => { const m = s.match(/[\\d.]+/g).map(Number); return [m[0], m[1], m[2], m.length > 3 ? m[3] : 1]; };
  const over = (top, under) => { const a = top[3]; return [0, 1, 2].map(i => top[i] * a + under[i] * (1 - a)).concat(1); };
  const lum = (c) => { const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]); };
  const code = [...root.querySelectorAll('.turn .text .codeblock code')].at(-1);
  const chain = []; for (let e = code; e; e = e.parentElement) chain.push(rgba(getComputedStyle(e).backgroundColor));
  let bg = [255, 255, 255, 1]; for (const c of chain.reverse()) bg = over(c, bg);
  const out = {};
  for (const s of code.querySelectorAll('span[class^="hljs-"]')) {
    const fg = over(rgba(getComputedStyle(s).color), bg);
    const [hi, lo] = [lum(fg), lum(bg)].sort((a, b) => b - a);
    out[s.className + ' ' + s.textContent.trim().slice(0, 12)] = Math.round((hi + 0.05) / (lo + 0.05) * 100) / 100;
  }
  out.kinds = new Set([...code.querySelectorAll('span[class^="hljs-"]')].map(s => getComputedStyle(s).color)).size;
  return out;
}"""


def test_highlighted_code_is_legible_in_light_dark_and_high_contrast_themes(vs: Env) -> None:
    """The code block's colours come from the theme: in the light, dark and both high-contrast
    themes every highlighted token keeps a contrast of at least 3:1 with the block's background
    (WCAG's minimum for large text and UI parts), and the tokens are not all one colour."""
    vs.script({"text": f"```python\n{THEMED}```\n"})
    wb = vs.wb
    wb.open_chat()
    wb.chat_send("show a class")
    wb.wait_chat(".turn .outcome", regex="^done$")
    import time

    seen: dict[str, dict] = {}
    previous = None
    for theme in ["Default Light Modern", "Default Dark Modern", "Default High Contrast", "Default High Contrast Light"]:
        vs.settings(**{"workbench.colorTheme": theme})
        deadline = time.monotonic() + 30
        while True:  # the webview takes the theme's variables a moment after the workbench
            contrast = wb.chat_eval(CONTRAST)
            if contrast != previous or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        previous = dict(contrast)
        kinds = contrast.pop("kinds")
        seen[theme] = contrast
        assert contrast and min(contrast.values()) >= 3, (theme, contrast)
        assert kinds >= 4, (theme, kinds, contrast)
    assert len({tuple(sorted(c.items())) for c in seen.values()}) == 4, seen  # each theme its own colours


def test_a_turns_rewind_button_puts_its_files_back(vs: Env) -> None:
    """A turn's Rewind button in the view asks what goes back (VS Code's quick pick); files and
    conversation: the file its command created is gone, VS Code says so, the view reloads."""
    wb = vs.wb
    vs.script(
        {"tool_calls": [{"name": "bash", "arguments": {"command": "echo made > made-by-turn.txt"}}]},
        {"text": "made it"},
    )
    wb.open_file("calc.py")
    wb.select_line("return a * b")
    wb.open_chat()
    wb.palette("ndomo: Fix selection with the builder agent")
    wb.wait_chat("#approvals .approval", text="made-by-turn.txt")
    wb.chat_click("#approvals .approval button", text=LABELS["once"])
    wb.wait_chat(".turn:last-child .outcome", regex="^done$")
    assert (vs.ws / "made-by-turn.txt").exists()
    wb.chat_click(".turn:last-child button.rewind", text="Rewind")
    wb.pick("Files and conversation")
    wb.wait_toast(regex="rewound to before turn .*made-by-turn.txt")
    assert not (vs.ws / "made-by-turn.txt").exists()
