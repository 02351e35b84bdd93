"""The mentions' budget (features/mentions.py): each within its share, all within the total,
every cut said in the text the model reads."""

from __future__ import annotations

from ndomo.features.mentions import MENTION_CHARS, TOTAL_CHARS, Mentioned, cut, render


def test_a_text_within_its_share_is_whole_and_a_longer_one_is_cut_at_a_line_end() -> None:
    assert cut("a.txt", "one\ntwo\n", 100) == "one\ntwo\n"
    text = "".join(f"line {i}\n" for i in range(100))
    out = cut("a.txt", text, 30)
    assert out.startswith("line 0\nline 1\nline 2\nline 3\n")
    assert out.endswith(
        "[cut: a.txt is 790 characters; lines 1-4 of 100 shown — read the rest with the read tool]"
    )


def test_the_shared_budget_leaves_no_room_for_a_fourth_big_mention_and_says_so() -> None:
    big = "x" * 9 + "\n"
    found = [Mentioned(name, big * 3000) for name in ("a", "b", "c", "d")]  # 30,000 each
    out = render(found)
    assert out.count("[cut: ") == 4
    assert "[cut: no room left for d]" in out
    assert len(out) < TOTAL_CHARS + 2_000
    first = out.split("Mentioned b:")[0]
    assert MENTION_CHARS - 20 < first.count("x") + first.count("\n") < MENTION_CHARS + 200
