"""A turn's review in a real VS Code (code-server 4.100.3, headless Chromium): the Review
button of a turn in the chat view and "ndomo: Review turn" open every changed file in the
multi-file diff editor, then a quick pick of the hunks (checked = kept). The turn's command
runs in the real sandbox; what the review leaves is checked on disk."""

from __future__ import annotations

from tests.editors.test_vscode_real import LABELS, WHY, Env, env, pytestmark, vs  # noqa: F401
from tests.editors.vscode_harness import ROWS

A = "one\ntwo\nthree\nfour\nfive\nsix\nseven\n"
CHANGE = (
    "sed -i 's/two/TWO/; s/six/SIX/' review-a.txt && sed -i 's/b1/B1/' review-b.txt"
    " && rm review-gone.txt && printf 'made\\n' > review-made.txt"
)


def _turn(vs: Env) -> None:
    """One turn of the builder whose command changes, deletes and creates files."""
    for name, text in (("review-a.txt", A), ("review-b.txt", "b1\n"), ("review-gone.txt", "old\n")):
        (vs.ws / name).write_text(text, encoding="utf-8")
    (vs.ws / "review-made.txt").unlink(missing_ok=True)
    wb = vs.wb
    vs.script(
        {"tool_calls": [{"name": "bash", "arguments": {"command": CHANGE}}]},
        {"text": "changed them"},
    )
    wb.open_file("calc.py")
    wb.select_line("return a * b")
    wb.open_chat()
    wb.palette("ndomo: Fix selection with the builder agent")
    wb.wait_chat("#approvals .approval", text="review-made.txt")
    wb.chat_click("#approvals .approval button", text=LABELS["once"])
    wb.wait_chat(".turn:last-child .outcome", regex="^done$")
    assert (vs.ws / "review-made.txt").read_text() == "made\n"
    assert not (vs.ws / "review-gone.txt").exists()


def _rows(vs: Env) -> list[str]:
    vs.wb.d.call("waitText", selector=ROWS, text="review-a.txt:2")
    return [str(x) for x in vs.wb.d.call("attr", selector=ROWS, name="aria-label") if x]


def _checked(vs: Env) -> dict[str, bool]:
    """Each quick-pick row's label → its checkbox is checked."""
    return vs.wb.d.call(
        "eval",
        js="Object.fromEntries([...document.querySelectorAll('.quick-input-list .monaco-list-row')]"
        ".map(r => [r.querySelector('.label-name')?.textContent ?? r.getAttribute('aria-label'),"
        " r.querySelector('input[type=checkbox]')?.checked ?? r.getAttribute('aria-checked') === 'true']))",
    )


def test_the_review_button_opens_every_file_and_puts_back_only_the_rejected_hunks(vs: Env) -> None:
    wb = vs.wb
    _turn(vs)
    wb.chat_click(".turn:last-child button.review", text="Review")
    # the multi-file diff editor, one entry per changed file
    wb.d.call("waitText", selector=".tab", regex="ndomo review: turn \\d+")
    for name in ("review-a.txt", "review-b.txt", "review-gone.txt", "review-made.txt"):
        wb.d.call("waitText", selector=".multiDiffEntry", text=name)
    rows = _rows(vs)
    for label in (
        "review-a.txt:2 −1 +1",
        "review-a.txt:6 −1 +1",
        "review-b.txt:1 −1 +1",
        "review-gone.txt (deleted, 1 lines)",
        "review-made.txt (created, 1 lines)",
    ):
        assert any(r.startswith(label) for r in rows), (label, rows)
    assert all(_checked(vs).values()), _checked(vs)  # every hunk kept at first
    # uncheck: a.txt's first hunk, the created and the deleted file
    for label in ("review-a.txt:2", "review-made.txt", "review-gone.txt"):
        wb.pick(label)
    checked = _checked(vs)
    assert sorted(k for k, v in checked.items() if not v) == [
        "review-a.txt:2 −1 +1",
        "review-gone.txt (deleted, 1 lines)",
        "review-made.txt (created, 1 lines)",
    ], checked
    wb.d.call("press", keys="Enter")
    wb.wait_toast(regex="put back 3 hunk\\(s\\) in review-a.txt, review-gone.txt, review-made.txt")
    assert (vs.ws / "review-a.txt").read_text() == A.replace("six", "SIX")  # rejected back, kept stays
    assert (vs.ws / "review-b.txt").read_text() == "B1\n"  # kept
    assert (vs.ws / "review-gone.txt").read_text() == "old\n"  # deleted, rejected: back
    assert not (vs.ws / "review-made.txt").exists()  # created, rejected: gone


def test_review_turn_from_the_palette_refuses_a_file_changed_since(vs: Env) -> None:
    wb = vs.wb
    _turn(vs)
    wb.palette("ndomo: Review turn")
    wb.d.call("waitText", selector=".tab", regex="ndomo review: turn \\d+")
    _rows(vs)
    # the user edits review-b.txt while the review is open; both files' hunks rejected
    (vs.ws / "review-b.txt").write_text("B1\nmine\n", encoding="utf-8")
    for label in ("review-a.txt:6", "review-b.txt"):
        wb.pick(label)
    wb.d.call("press", keys="Enter")
    wb.wait_toast(regex="refused review-b.txt: changed since the review")
    assert (vs.ws / "review-b.txt").read_text() == "B1\nmine\n"  # left as the user made it
    assert (vs.ws / "review-a.txt").read_text() == A.replace("two", "TWO")  # the other file: applied
    assert (vs.ws / "review-made.txt").read_text() == "made\n"  # kept


def test_with_review_after_turn_the_review_opens_when_the_turn_ends(vs: Env) -> None:
    wb = vs.wb
    vs.settings(**{"ndomo.review.afterTurn": True})
    _turn(vs)
    # no click: the diff editor and the pick of hunks open by themselves
    wb.d.call("waitText", selector=".tab", regex="ndomo review: turn \\d+")
    rows = _rows(vs)
    assert any(r.startswith("review-made.txt (created") for r in rows), rows
    wb.escape()  # Esc: nothing put back
    assert (vs.ws / "review-made.txt").read_text() == "made\n"
    assert (vs.ws / "review-a.txt").read_text() == A.replace("two", "TWO").replace("six", "SIX")
