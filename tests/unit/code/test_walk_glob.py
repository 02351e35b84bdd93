import os

import pytest

from ndomo.lib.search import PatternError, glob_files, iter_files
from ndomo.lib.search.walk import walk

FILES = {
    ".gitignore": "*.log\nbuild/\n!keep.log\n/rootonly.txt\n",
    "a.py": "x",
    "keep.log": "k",
    "drop.log": "d",
    "rootonly.txt": "r",
    "src/main.ts": "x",
    "src/view.tsx": "x",
    "src/util/helper.ts": "x",
    "src/rootonly.txt": "nested file of the same name is kept",
    "src/.gitignore": "generated/\n*.tmp\n",
    "src/generated/out.ts": "x",
    "src/cache.tmp": "x",
    "other/cache.tmp": "x",
    "build/artifact.py": "x",
    "pkg/build/inner.py": "x",
    "lib/.ignore": "secret.py\n",
    "lib/secret.py": "x",
    "lib/public.py": "x",
    "node_modules/dep/index.js": "x",
    "venv/lib/site.py": "x",
    ".venv/x.py": "x",
    "__pycache__/a.pyc": "x",
    ".ndomo/ndomo.db": "x",
    ".git/config": "x",
    ".github/workflows/ci.yml": "x",
    ".env": "x",
}


def rels(root, **kw):
    return [rel for rel, _ in walk(root, **kw)]


def test_walk_honours_ignore_files_and_skips(tree):
    root = tree(FILES)
    assert rels(root) == [
        "a.py",
        "keep.log",
        "lib/public.py",
        "other/cache.tmp",
        "src/main.ts",
        "src/rootonly.txt",
        "src/util/helper.ts",
        "src/view.tsx",
    ]


def test_walk_hidden_opt_in_still_skips_vcs_and_venvs(tree):
    root = tree(FILES)
    got = rels(root, include_hidden=True)
    assert ".github/workflows/ci.yml" in got and ".env" in got
    assert ".gitignore" in got
    assert not any(r.startswith((".git/", ".ndomo/", ".venv/")) for r in got)


def test_walk_order_is_depth_first_by_name(tree):
    root = tree({"a.py": "", "a/b.py": "", "a-b.py": "", "B.py": ""})
    # Entries sorted by name per folder ("a" < "a-b.py"), the order of rg --sort path.
    assert rels(root) == ["B.py", "a/b.py", "a-b.py", "a.py"]


def test_iter_files_yields_absolute_paths(tree):
    root = tree({"x/y.py": ""})
    assert list(iter_files(root)) == [(root / "x/y.py").resolve()]


def test_walk_under_applies_ancestor_rules(tree):
    root = tree(FILES)
    assert rels(root, under="src") == [
        "src/main.ts",
        "src/rootonly.txt",
        "src/util/helper.ts",
        "src/view.tsx",
    ]
    with pytest.raises(ValueError):
        rels(root, under="../outside")


def test_symlinks_never_leave_root(tree, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "leak.py").write_text("x")
    root = tree({"real/in.py": "x"})
    os.symlink(outside, root / "linkdir")
    os.symlink(outside / "leak.py", root / "leak.py")
    os.symlink(root / "real", root / "alias")
    os.symlink(root, root / "real" / "loop")
    assert rels(root) == ["real/in.py"]
    followed = rels(root, follow_symlinks=True)
    assert "alias/in.py" in followed and "real/in.py" in followed
    assert not any("leak" in r for r in followed)


def test_glob_patterns(tree):
    root = tree(FILES)
    assert glob_files(root, "**/*.ts").paths == ["src/main.ts", "src/util/helper.ts"]
    assert glob_files(root, "src/*.ts").paths == ["src/main.ts"]
    assert glob_files(root, "*.{ts,tsx}").paths == [
        "src/main.ts",
        "src/util/helper.ts",
        "src/view.tsx",
    ]
    assert glob_files(root, "*.py").paths == ["a.py", "lib/public.py"]
    assert glob_files(root, "src/**").paths == [
        "src/main.ts",
        "src/rootonly.txt",
        "src/util/helper.ts",
        "src/view.tsx",
    ]
    assert glob_files(root, "nothing/*.py").paths == []


def test_glob_ignored_prefix_and_hidden(tree):
    root = tree(FILES)
    assert glob_files(root, "build/*.py").paths == []
    assert glob_files(root, "node_modules/**/*.js").paths == []
    assert glob_files(root, ".github/**/*.yml").paths == [".github/workflows/ci.yml"]
    assert glob_files(root, "*.yml").paths == []
    assert glob_files(root, "*.yml", include_hidden=True).paths == [".github/workflows/ci.yml"]


def test_glob_limit_truncates_sorted(tree):
    root = tree({f"f{i:02}.py": "" for i in range(12)})
    res = glob_files(root, "*.py", limit=5)
    assert res.truncated and res.paths == [f"f{i:02}.py" for i in range(5)]
    assert "truncated" in res.render()
    full = glob_files(root, "*.py")
    assert not full.truncated and len(full.paths) == 12


@pytest.mark.parametrize("bad", ["", "  ", "!*.py", "../*.py"])
def test_glob_bad_patterns(tree, bad):
    root = tree({"a.py": ""})
    with pytest.raises(PatternError):
        glob_files(root, bad)


def test_a_fifo_ignore_file_or_fifo_in_the_tree_does_not_block_the_walk(tmp_path):
    import contextlib
    import os
    import threading

    from ndomo.lib.search import glob_files, grep

    (tmp_path / "a.py").write_text("needle\n")
    os.mkfifo(tmp_path / ".gitignore")
    (tmp_path / "sub").mkdir()
    os.mkfifo(tmp_path / "sub" / ".ignore")
    os.mkfifo(tmp_path / "sub" / "pipe.py")
    out: dict = {}

    def search() -> None:
        out["glob"] = glob_files(tmp_path, "**/*.py").paths
        out["grep"] = [m.path for m in grep(tmp_path, "needle", engine="python").matches]

    t = threading.Thread(target=search, daemon=True)
    t.start()
    t.join(10)
    blocked = t.is_alive()
    while t.is_alive():  # let each blocked open return, so no thread outlives the test
        for fifo in (".gitignore", "sub/.ignore", "sub/pipe.py"):
            with contextlib.suppress(OSError):  # nobody reads that one now
                os.close(os.open(tmp_path / fifo, os.O_WRONLY | os.O_NONBLOCK))
        t.join(0.1)
    assert not blocked, "the walk blocked on a FIFO"
    assert out == {"glob": ["a.py"], "grep": ["a.py"]}
