"""Hostile paths through every path-taking tool: refused readably, nothing outside touched."""

from __future__ import annotations

import os

import pytest

SECRET = "TOP-SECRET-OUTSIDE"


@pytest.fixture
def outside(tmp_path, ws):
    out = tmp_path / "outside"
    out.mkdir()
    (out / "secret.txt").write_text(SECRET + "\n")
    os.symlink(out, ws / "linkdir")  # a folder symlink leaving the workspace
    os.symlink(out / "secret.txt", ws / "linkfile.txt")  # a file symlink leaving it
    (ws / "sub").mkdir()
    return out


def corpus(ws, out):
    return [
        "../outside/secret.txt",
        "sub/../../outside/secret.txt",
        str(out / "secret.txt"),
        str(ws) + "/../outside/secret.txt",
        "linkdir/secret.txt",
        "linkfile.txt",
        "linkdir/new.txt",
        "~/secret.txt",
        "/proc/self/environ",
        "/etc/passwd",
        "C:\\Windows\\win.ini",
        "\\\\server\\share\\x.txt",
        "//server/share/x.txt",
        "sub/\x00.txt",
        "   ",
    ]


def _calls(path):
    return [
        ("read", {"path": path}),
        ("write", {"path": path, "content": "pwned"}),
        ("edit", {"path": path, "old_text": SECRET, "new_text": "pwned"}),
        ("apply_patch", {"patch": f"--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-{SECRET}\n+pwned\n"}),
        ("apply_patch", {"patch": f"--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+pwned\n"}),
        ("outline_file", {"path": path}),
        ("grep", {"pattern": "SECRET", "path": path}),
        ("file_map", {"path": path}),
    ]


def _snapshot(out):
    return {p.name: p.read_bytes() for p in out.iterdir()}


async def test_hostile_paths_are_refused_and_nothing_outside_is_touched(
    ws, outside, make_ctx, call
):
    ctx = await make_ctx()
    before = _snapshot(outside)
    cases = corpus(ws, outside)
    assert len(cases) >= 10
    for path in cases:
        for name, args in _calls(path):
            if path.strip() == "" and name in ("grep", "file_map"):
                continue  # an optional folder left blank means the workspace root
            res = await call(ctx, name, args)
            assert not res.ok, (name, path, res.content)
            assert SECRET not in res.content, (name, path)
            assert res.content.strip(), (name, path)
            # a clear reason, not a crash report
            assert f"tool '{name}' failed" not in res.content, res.content
    assert _snapshot(outside) == before
    assert ctx.modified == []


async def test_refusal_messages_name_the_problem(ws, outside, make_ctx, call):
    ctx = await make_ctx()
    expect = {
        "../outside/secret.txt": "escapes the workspace",
        str(outside / "secret.txt"): "outside every workspace folder",
        "linkdir/secret.txt": "points outside the workspace",
        "linkfile.txt": "points outside the workspace",
        "~/secret.txt": "home-relative",
        "/proc/self/environ": "/proc",
        "C:\\Windows\\win.ini": "Windows drive",
        "//server/share/x.txt": "UNC",
    }
    for path, message in expect.items():
        res = await call(ctx, "read", {"path": path})
        assert res.content.startswith("path refused:") and message in res.content, (
            path,
            res.content,
        )


async def test_glob_patterns_cannot_leave_the_workspace(ws, outside, make_ctx, call):
    ctx = await make_ctx()
    for pattern in ("../outside/*", "../**/*.txt", "~/x/*", "/etc/*", str(outside) + "/*"):
        res = await call(ctx, "glob", {"pattern": pattern})
        assert not res.ok and "workspace" in res.content and "secret.txt" not in res.content, (
            pattern
        )
    res = await call(ctx, "glob", {"pattern": "**/*.txt"})
    assert "secret" not in res.content  # symlinks out are not followed
    res = await call(ctx, "grep", {"pattern": "SECRET"})
    assert SECRET not in res.content


async def test_inside_paths_in_many_spellings_work(ws, make_ctx, call):
    (ws / "sub").mkdir()
    (ws / "sub/ok.txt").write_text("fine\n")
    os.symlink(ws / "sub", ws / "inner")  # a symlink that stays inside is fine
    ctx = await make_ctx()
    for path in (
        "sub/ok.txt",
        "./sub/ok.txt",
        "sub/../sub/ok.txt",
        str(ws / "sub/ok.txt"),
        "inner/ok.txt",
    ):
        res = await call(ctx, "read", {"path": path})
        assert res.ok and "fine" in res.content, (path, res.content)
