"""A call's card details: the sandbox words and the per-file diffs the views show."""

from __future__ import annotations

from ndomo.runtime.callnotes import DIFF_SHOWN, file_diff, sandbox_label
from ndomo.runtime.tools import FileChange


def test_the_sandbox_words_say_what_the_command_ran_in() -> None:
    assert sandbox_label(True, False, None) == "sandboxed · offline"
    assert sandbox_label(True, False, []) == "sandboxed · offline"  # a proxy that lets nothing out
    assert sandbox_label(True, False, ["pypi.org", "files.pythonhosted.org"]) == (
        "sandboxed · network: pypi.org, files.pythonhosted.org"
    )
    assert sandbox_label(True, True, None) == "sandboxed · network"
    assert sandbox_label(False, True, None) == "not sandboxed"


def test_a_files_diff_names_its_sides_and_its_first_changed_line() -> None:
    made = file_diff(FileChange("new.txt", "create", None, "a\nb\n"))
    assert (made.path, made.kind, made.line, made.cut) == ("new.txt", "create", 1, False)
    assert made.diff == "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+a\n+b\n"
    before = "".join(f"line {i}\n" for i in range(1, 11))
    changed = file_diff(FileChange("f.py", "modify", before, before.replace("line 7", "LINE 7")))
    assert changed.line == 7  # past the hunk's leading context
    assert "-line 7\n+LINE 7\n" in changed.diff
    gone = file_diff(FileChange("old.txt", "delete", "x", None))
    assert gone.kind == "delete" and gone.path == "old.txt"
    assert (
        gone.diff
        == "--- a/old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n\\ No newline at end of file\n"
    )
    moved = file_diff(FileChange("a.txt", "move", "x\n", "x\n", to="b.txt"))
    assert moved.path == "b.txt" and moved.kind == "move"


def test_a_long_diff_is_cut_and_says_so() -> None:
    big = file_diff(FileChange("big.txt", "create", None, "y\n" * DIFF_SHOWN))
    assert big.cut is True and len(big.diff) == DIFF_SHOWN
