"""Minimal text edits: applied by pygls' own document model (UTF-16 positions, every LSP
line terminator), they turn the old text into the new one, touching only changed lines."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from lsprotocol import types
from pygls.workspace import TextDocument

from ndomo.lsp.text_edits import split_lines, text_edits

# No form feed / U+2028 here: pygls' document model splits lines on them (str.splitlines),
# the LSP does not; `split_lines` is checked on them separately below.
LINES = st.lists(st.sampled_from(["a", "b", "é", "𝄞x", "", "c c", "\t"]), max_size=6).map("".join)
TEXT = st.lists(st.tuples(LINES, st.sampled_from(["\n", "\r\n", "\r"])), max_size=8).map(
    lambda parts: "".join(a + b for a, b in parts)
) | st.builds(lambda t, tail: t + tail, st.just("x\ny\n"), LINES)


def apply(old: str, edits: list[types.TextEdit]) -> str:
    doc = TextDocument("file:///t.txt", old, version=1)
    for e in reversed(edits):  # document order; later ones first keeps earlier ranges valid
        doc.apply_change(types.TextDocumentContentChangePartial(range=e.range, text=e.new_text))
    return doc.source


@settings(max_examples=300, deadline=None)
@given(TEXT, TEXT)
def test_edits_turn_old_into_new(old, new):
    assert apply(old, text_edits(old, new)) == new


def test_a_one_line_change_is_one_edit_of_that_line():
    old = "".join(f"line {i}\n" for i in range(100))
    new = old.replace("line 40\n", "line forty\n")
    (edit,) = text_edits(old, new)
    assert (
        edit.range.start.line,
        edit.range.start.character,
        edit.range.end.line,
        edit.range.end.character,
    ) == (40, 0, 41, 0)
    assert edit.new_text == "line forty\n"


def test_no_change_no_edit_and_only_lsp_terminators_split():
    assert text_edits("a\nb", "a\nb") == []
    assert split_lines("a\fb\u2028c\r\nd\re") == ["a\fb\u2028c\r\n", "d\r", "e"]


def test_change_on_a_last_line_without_newline_ends_at_its_end():
    (edit,) = text_edits("a\n𝄞b", "a\n𝄞c")
    assert edit.range.end == types.Position(line=1, character=3)  # 𝄞 is two UTF-16 units
