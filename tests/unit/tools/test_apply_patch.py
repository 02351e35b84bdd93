"""apply_patch: multi-file, all-or-nothing, lenient parsing, strict content."""

from __future__ import annotations

import difflib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ndomo.tools.files.patch import PatchError, apply_file_patch, parse_patch

MULTI = """\
diff --git a/src/a.py b/src/a.py
--- a/src/a.py
+++ b/src/a.py
@@ -1,3 +1,3 @@
 def a():
-    return 1
+    return 10
 
@@ -5,2 +5,3 @@
 def b():
     return 2
+# end
--- /dev/null
+++ b/new/b.py
@@ -0,0 +1,2 @@
+print("new")
+print("file")
--- a/old.txt
+++ /dev/null
@@ -1,2 +0,0 @@
-bye
-now
"""


def _seed(ws):
    (ws / "src").mkdir()
    (ws / "src/a.py").write_text("def a():\n    return 1\n\n\ndef b():\n    return 2\n")
    (ws / "old.txt").write_text("bye\nnow\n")


async def test_multi_file_patch_applies_and_records(ws, app, make_ctx, call):
    _seed(ws)
    ctx = await make_ctx()
    res = await call(ctx, "apply_patch", {"patch": MULTI})
    assert res.ok, res.content
    assert res.content.splitlines() == [
        "patched src/a.py (2 hunks)",
        "created new/b.py (1 hunks)",
        "deleted old.txt",
    ]
    assert (
        ws / "src/a.py"
    ).read_text() == "def a():\n    return 10\n\n\ndef b():\n    return 2\n# end\n"
    assert (ws / "new/b.py").read_text() == 'print("new")\nprint("file")\n'
    assert not (ws / "old.txt").exists()
    store = await app.store()
    edits = await store.turn_edits(ctx.turn_id)
    assert sorted(e.path for e in edits) == ["new/b.py", "old.txt", "src/a.py"]
    assert next(e for e in edits if e.path == "old.txt").after is None
    assert sorted(ctx.modified) == sorted([ws / "src/a.py", ws / "new/b.py", ws / "old.txt"])


async def test_one_bad_hunk_changes_no_file(ws, app, make_ctx, call):
    _seed(ws)
    bad = MULTI.replace(" def b():\n     return 2\n+# end", " def b():\n     return 3\n+# end")
    before = {p: p.read_text() for p in (ws / "src/a.py", ws / "old.txt")}
    ctx = await make_ctx()
    res = await call(ctx, "apply_patch", {"patch": bad})
    assert not res.ok
    assert "no file changed" in res.content and "src/a.py hunk 2 (@@ -5,2 +5,3 @@)" in res.content
    assert {p: p.read_text() for p in before} == before
    assert not (ws / "new/b.py").exists() and not (ws / "new").exists()
    store = await app.store()
    assert await store.turn_edits(ctx.turn_id) == [] and ctx.modified == []


async def test_bad_hunk_in_a_later_file_changes_no_earlier_file(ws, make_ctx, call):
    (ws / "one.txt").write_text("a\nb\n")
    (ws / "two.txt").write_text("c\nd\n")
    patch = (
        "--- a/one.txt\n+++ b/one.txt\n@@ -1,2 +1,2 @@\n a\n-b\n+B\n"
        "--- a/two.txt\n+++ b/two.txt\n@@ -1,2 +1,2 @@\n c\n-x\n+X\n"
    )
    ctx = await make_ctx()
    res = await call(ctx, "apply_patch", {"patch": patch})
    assert not res.ok and "two.txt hunk 1" in res.content
    assert (ws / "one.txt").read_text() == "a\nb\n"


async def test_patch_errors_are_readable(ws, make_ctx, call):
    (ws / "x.txt").write_text("x\n")
    ctx = await make_ctx()
    cases = {
        "just prose": "no file changes found",
        "*** Begin Patch\n*** Update File: x.txt\n": "not a unified diff",
        "--- a/x.txt\n+++ b/x.txt\n": "no @@ hunks",
        "--- /dev/null\n+++ b/x.txt\n@@ -0,0 +1 @@\n+y\n": "already exists",
        "--- a/nope.txt\n+++ b/nope.txt\n@@ -1 +1 @@\n-a\n+b\n": "does not exist",
        "--- a/x.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-z\n": "do not match",
    }
    for patch, message in cases.items():
        res = await call(ctx, "apply_patch", {"patch": patch})
        assert not res.ok and message in res.content, (patch, res.content)
    assert (ws / "x.txt").read_text() == "x\n"


async def test_rename(ws, make_ctx, call):
    (ws / "a.txt").write_text("1\n2\n")
    patch = "--- a/a.txt\n+++ b/b.txt\n@@ -1,2 +1,2 @@\n 1\n-2\n+two\n"
    ctx = await make_ctx()
    res = await call(ctx, "apply_patch", {"patch": patch})
    assert res.ok and "renamed a.txt → b.txt" in res.content
    assert not (ws / "a.txt").exists() and (ws / "b.txt").read_text() == "1\ntwo\n"


def test_lenient_parsing_miscounts_and_dropped_spaces():
    # counts are wrong and the empty context line lost its space
    patch = "--- a/f\n+++ b/f\n@@ -1,9 +1,9 @@\n one\n\n-three\n+THREE\n"
    assert apply_file_patch("one\n\nthree\nfour\n", parse_patch(patch)[0]) == "one\n\nTHREE\nfour\n"


def test_removed_line_that_looks_like_a_header():
    # '-- comment' removed from SQL shows as '--- comment' inside a counted hunk
    patch = "--- a/q.sql\n+++ b/q.sql\n@@ -1,2 +1,1 @@\n--- comment\n+++ fancy\n select 1;\n"
    fp = parse_patch(patch)[0]
    assert apply_file_patch("-- comment\nselect 1;\n", fp) == "++ fancy\nselect 1;\n"


def test_no_newline_markers():
    add_eol = "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-x\n\\ No newline at end of file\n+x\n"
    assert apply_file_patch("x", parse_patch(add_eol)[0]) == "x\n"
    drop_eol = "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-x\n+y\n\\ No newline at end of file\n"
    assert apply_file_patch("x\n", parse_patch(drop_eol)[0]) == "y"


def test_hunk_found_near_a_wrong_line_number():
    text = "".join(f"l{i}\n" for i in range(30))
    patch = "--- a/f\n+++ b/f\n@@ -3,2 +3,2 @@\n l20\n-l21\n+L21\n"
    assert "L21\nl22" in apply_file_patch(text, parse_patch(patch)[0])


def test_header_paths():
    fps = parse_patch("--- a/x y.txt\t2024-01-01\n+++ b/x y.txt\t2024-01-02\n@@ -1 +1 @@\n-a\n+b\n")
    assert fps[0].paths == ["x y.txt"]
    fps = parse_patch("--- x.txt\n+++ x.txt\n@@ -1 +1 @@\n-a\n+b\n")
    assert fps[0].paths == ["x.txt"]
    with pytest.raises(PatchError, match="before any"):
        parse_patch("@@ -1 +1 @@\n-a\n+b\n")


lines = st.lists(
    st.sampled_from(["a", "b", "c", "", "def f():", "    return 1", "-- x", "+ y"]), max_size=25
)


@settings(max_examples=150, deadline=None)
@given(lines, lines, st.integers(min_value=0, max_value=3))
def test_round_trip_with_difflib(old, new, context):
    a = "".join(line + "\n" for line in old)
    b = "".join(line + "\n" for line in new)
    diff = "".join(
        difflib.unified_diff(a.splitlines(True), b.splitlines(True), "a/f", "b/f", n=context)
    )
    if not diff:
        return
    assert apply_file_patch(a, parse_patch(diff)[0]) == b
