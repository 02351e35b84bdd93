"""write and edit: exact-once semantics, recorded turn edits, modified files."""

from __future__ import annotations


async def _edits(app, ctx):
    store = await app.store()
    return await store.turn_edits(ctx.turn_id)


async def test_write_creates_file_in_new_folder_and_records_it(ws, app, make_ctx, call):
    ctx = await make_ctx()
    res = await call(ctx, "write", {"path": "pkg/sub/new.py", "content": "x = 1\ny = 2\n"})
    assert res.ok and res.content == "created pkg/sub/new.py (2 lines)"
    assert (ws / "pkg/sub/new.py").read_text() == "x = 1\ny = 2\n"
    edits = await _edits(app, ctx)
    assert [(e.path, e.before, e.after) for e in edits] == [
        ("pkg/sub/new.py", None, "x = 1\ny = 2\n")
    ]
    assert ctx.modified == [ws / "pkg/sub/new.py"]


async def test_write_overwrites_and_counts_each_file_once(ws, app, make_ctx, call):
    (ws / "a.txt").write_text("old\n")
    ctx = await make_ctx()
    assert (await call(ctx, "write", {"path": "a.txt", "content": "new\n"})).content.startswith(
        "overwrote a.txt"
    )
    assert (await call(ctx, "write", {"path": "a.txt", "content": "newer\n"})).ok
    res = await call(ctx, "write", {"path": "a.txt", "content": "newer\n"})
    assert "nothing written" in res.content
    edits = await _edits(app, ctx)
    assert [(e.before, e.after) for e in edits] == [("old\n", "new\n"), ("new\n", "newer\n")]
    assert ctx.modified == [ws / "a.txt"]


async def test_write_refuses_folders_and_git_internals(ws, make_ctx, call):
    (ws / "d").mkdir()
    (ws / ".git").mkdir()
    ctx = await make_ctx()
    res = await call(ctx, "write", {"path": "d", "content": "x"})
    assert not res.ok and "is a folder" in res.content
    res = await call(ctx, "write", {"path": ".git/config", "content": "x"})
    assert not res.ok and ".git" in res.content and not (ws / ".git/config").exists()


async def test_edit_replaces_exactly_once(ws, app, make_ctx, call):
    (ws / "m.py").write_text("def f():\n    return 1\n\ndef g():\n    return 2\n")
    ctx = await make_ctx()
    res = await call(
        ctx, "edit", {"path": "m.py", "old_text": "    return 2\n", "new_text": "    return 3\n"}
    )
    assert res.ok and "edited m.py at line 5" in res.content
    assert (ws / "m.py").read_text().endswith("return 3\n")
    assert len(await _edits(app, ctx)) == 1 and ctx.modified == [ws / "m.py"]


async def test_edit_several_matches_asks_for_context(ws, make_ctx, call):
    original = "a = 1\nb = 1\na = 1\n"
    (ws / "m.py").write_text(original)
    ctx = await make_ctx()
    res = await call(ctx, "edit", {"path": "m.py", "old_text": "a = 1", "new_text": "a = 2"})
    assert not res.ok and "occurs 2 times" in res.content and "lines 1, 3" in res.content
    assert "more surrounding lines" in res.content
    assert (ws / "m.py").read_text() == original and ctx.modified == []


async def test_edit_no_match_hints_at_closest_line(ws, make_ctx, call):
    original = "def compute_total(items):\n    return sum(items)\n"
    (ws / "m.py").write_text(original)
    ctx = await make_ctx()
    res = await call(
        ctx, "edit", {"path": "m.py", "old_text": "def compute_totals(items):", "new_text": "x"}
    )
    assert not res.ok and "old_text not found in m.py" in res.content
    assert "Closest line 1" in res.content and "compute_total(items)" in res.content
    res = await call(
        ctx, "edit", {"path": "m.py", "old_text": "  return   sum(items)", "new_text": "x"}
    )
    assert not res.ok and "matches at line 2 if whitespace is ignored" in res.content
    assert (ws / "m.py").read_text() == original


async def test_edit_missing_file_and_noop(ws, make_ctx, call):
    (ws / "m.py").write_text("x\n")
    ctx = await make_ctx()
    res = await call(ctx, "edit", {"path": "n.py", "old_text": "x", "new_text": "y"})
    assert not res.ok and "does not exist" in res.content
    res = await call(ctx, "edit", {"path": "m.py", "old_text": "x", "new_text": "x"})
    assert not res.ok and "nothing to change" in res.content
    res = await call(ctx, "edit", {"path": "m.py", "old_text": "", "new_text": "y"})
    assert not res.ok and "old_text" in res.content


async def test_edit_keeps_crlf_files_crlf(ws, make_ctx, call):
    from ndomo.runtime.host import BaseHost

    class RawHost(BaseHost):  # an editor buffer keeps its CRLFs (BaseHost's disk read folds them)
        async def read_text(self, path):
            return path.read_bytes().decode() if path.exists() else None

        async def apply_edit(self, path, new_text, old_text):
            from ndomo.runtime.host import EditOutcome

            assert old_text == await self.read_text(path)
            path.write_bytes(new_text.encode())
            return EditOutcome(applied=True)

    (ws / "w.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    ctx = await make_ctx(host=RawHost())
    res = await call(ctx, "edit", {"path": "w.txt", "old_text": "one\ntwo\n", "new_text": "1\n2\n"})
    assert res.ok, res.content
    assert (ws / "w.txt").read_bytes() == b"1\r\n2\r\nthree\r\n"


async def test_host_refusal_is_a_failure_not_a_record(ws, app, make_ctx, call):
    from ndomo.runtime.host import BaseHost, EditOutcome

    class Refusing(BaseHost):
        async def apply_edit(self, path, new_text, old_text):
            return EditOutcome(applied=False, reason="document is read-only")

    ctx = await make_ctx(host=Refusing())
    res = await call(ctx, "write", {"path": "x.txt", "content": "x"})
    assert not res.ok and "document is read-only" in res.content
    assert await _edits(app, ctx) == [] and ctx.modified == []


async def test_writes_in_a_nested_turn_count_in_the_parent(ws, make_ctx, call):
    parent = await make_ctx()
    child = await make_ctx()
    child.parent = parent
    assert (await call(child, "write", {"path": "c.txt", "content": "c"})).ok
    assert parent.modified == [ws / "c.txt"]
