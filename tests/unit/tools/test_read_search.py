"""read, glob and grep: ranges, caps, buffers first, secrets, ignore rules."""

from __future__ import annotations

import os

from ndomo.runtime.host import BaseHost
from ndomo.tools.files import read as read_mod


async def test_read_numbers_lines_and_ranges(ws, make_ctx, call):
    (ws / "a.py").write_text("".join(f"line {i}\n" for i in range(1, 21)))
    ctx = await make_ctx()
    res = await call(ctx, "read", {"path": "a.py"})
    assert res.ok and res.content.splitlines()[0] == "a.py (lines 1-20 of 20)"
    assert " 1  line 1" in res.content and "20  line 20" in res.content
    res = await call(ctx, "read", {"path": "a.py", "start_line": 5, "end_line": 7})
    assert res.content.splitlines() == [
        "a.py (lines 5-7 of 20)",
        "5  line 5",
        "6  line 6",
        "7  line 7",
    ]
    res = await call(ctx, "read", {"path": "a.py", "start_line": 18, "end_line": 99})
    assert res.content.splitlines()[0] == "a.py (lines 18-20 of 20)"


async def test_read_range_errors_are_clear(ws, make_ctx, call):
    (ws / "a.txt").write_text("x\ny\n")
    ctx = await make_ctx()
    res = await call(ctx, "read", {"path": "a.txt", "start_line": 9})
    assert not res.ok and "past the end of a.txt (2 lines)" in res.content
    res = await call(ctx, "read", {"path": "a.txt", "start_line": 3, "end_line": 2})
    assert not res.ok and "end_line 2 is before start_line 3" in res.content
    res = await call(ctx, "read", {"path": "a.txt", "start_line": 0})
    assert not res.ok and "start_line" in res.content


async def test_read_cap_is_stated_with_how_to_go_on(ws, make_ctx, call):
    n = read_mod.MAX_LINES + 300
    (ws / "big.txt").write_text("".join(f"row {i}\n" for i in range(1, n + 1)))
    ctx = await make_ctx()
    res = await call(ctx, "read", {"path": "big.txt"})
    cut = read_mod.MAX_LINES
    assert f"(lines 1-{cut} of {n})" in res.content
    assert f"read on with start_line={cut + 1}" in res.content
    assert f"row {cut + 1}\n" not in res.content + "\n"
    res = await call(ctx, "read", {"path": "big.txt", "start_line": cut + 1})
    assert f"row {n}" in res.content and "cut at" not in res.content


async def test_read_char_cap_and_long_line(ws, make_ctx, call):
    (ws / "wide.txt").write_text(("x" * 1500 + "\n") * 100 + "y" * 5000 + "\n")
    ctx = await make_ctx()
    res = await call(ctx, "read", {"path": "wide.txt"})
    assert len(res.content) <= read_mod.MAX_CHARS + 500
    assert "by the" in res.content and "read cap" in res.content
    res = await call(ctx, "read", {"path": "wide.txt", "start_line": 101})
    assert "[line cut at 2000 of 5000 chars]" in res.content


async def test_read_prefers_the_open_buffer(ws, make_ctx, call):
    (ws / "m.py").write_text("on disk\n")

    class Buffers(BaseHost):
        async def read_text(self, path):
            return "unsaved buffer\n" if path.name == "m.py" else await super().read_text(path)

    ctx = await make_ctx(host=Buffers())
    res = await call(ctx, "read", {"path": "m.py"})
    assert "unsaved buffer" in res.content and "on disk" not in res.content


async def test_read_missing_folder_binary(ws, make_ctx, call):
    (ws / "src").mkdir()
    (ws / "src" / "parser.py").write_text("p\n")
    (ws / "blob.bin").write_bytes(b"\x00\x01\x02abc")
    ctx = await make_ctx()
    res = await call(ctx, "read", {"path": "src/parsr.py"})
    assert (
        not res.ok
        and "src/parsr.py does not exist" in res.content
        and "src/parser.py" in res.content
    )
    res = await call(ctx, "read", {"path": "src"})
    assert res.ok and "src/ is a folder" in res.content and "parser.py" in res.content
    res = await call(ctx, "read", {"path": "blob.bin"})
    assert not res.ok and "binary" in res.content


async def test_read_declares_read_paths_for_the_secret_ask(plugins):
    tool = plugins.tools.get("read")
    params = tool.params(path="./config/../.env")
    assert tool.read_paths(params) == [".env"]


async def test_read_via_symlink_to_secret_is_refused(ws, make_ctx, call):
    (ws / ".env").write_text("TOKEN=hunter2\n")
    os.symlink(ws / ".env", ws / "settings.txt")
    ctx = await make_ctx()
    res = await call(ctx, "read", {"path": "settings.txt"})
    assert not res.ok and "secret-looking file .env" in res.content and "hunter2" not in res.content


async def test_glob_and_grep_honour_gitignore(ws, make_ctx, call):
    (ws / ".gitignore").write_text("build/\n")
    (ws / "src").mkdir()
    (ws / "build").mkdir()
    (ws / "src" / "a.py").write_text("def alpha():\n    return 1\n")
    (ws / "src" / "b.ts").write_text("const alpha = 2;\n")
    (ws / "build" / "a.py").write_text("def alpha(): pass\n")
    ctx = await make_ctx()
    res = await call(ctx, "glob", {"pattern": "**/*.py"})
    assert res.content.splitlines() == ["src/a.py"]
    res = await call(ctx, "grep", {"pattern": r"alpha"})
    assert res.content.splitlines() == [
        "src/a.py",
        "  1: def alpha():",
        "src/b.ts",
        "  1: const alpha = 2;",
    ]
    res = await call(ctx, "grep", {"pattern": "alpha", "glob": "*.ts"})
    assert "src/b.ts" in res.content and "a.py" not in res.content
    res = await call(ctx, "grep", {"pattern": "alpha", "path": "src/a.py"})
    assert res.content.startswith("src/a.py") and "b.ts" not in res.content
    res = await call(ctx, "grep", {"pattern": "("})
    assert not res.ok and "invalid regex" in res.content
    res = await call(ctx, "glob", {"pattern": str(ws / "src" / "*.ts")})
    assert res.content == "src/b.ts"


async def test_grep_does_not_show_secret_files(ws, make_ctx, call):
    (ws / "deploy.pem").write_text("PRIVATE KEY material\n")
    (ws / "notes.md").write_text("the KEY is elsewhere\n")
    ctx = await make_ctx()
    res = await call(ctx, "grep", {"pattern": "KEY"})
    assert "notes.md" in res.content and "material" not in res.content
    assert "secret-looking file(s) matched but are not shown: deploy.pem" in res.content
