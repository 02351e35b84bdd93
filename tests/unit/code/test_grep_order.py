"""rg runs unsorted on all threads; its matches must still come out in walk order."""

import importlib

import pytest

from ndomo.lib.search import grep
from ndomo.lib.search.grep import find_rg, walk_key

grep_mod = importlib.import_module("ndomo.lib.search.grep")

needs_rg = pytest.mark.skipif(find_rg() is None, reason="no working rg binary")


def _tree(tree):
    files = {}
    for d in ("a", "a-b", "a.b", "b", "b/c", "B", "z"):
        for name in ("x.py", "y.txt", "a-1.md", "ñ.py"):
            files[f"{d}/{name}"] = "hit 1\nmiss\nhit 2\n" + "hit more\n" * 3
    files["a.py"] = "hit top\n"
    files["big.txt"] = "hit\n" * 50
    files[".gitignore"] = "z/\n"
    return tree(files)


def _key(res):
    return [(m.path, m.line, m.text) for m in res.matches], res.truncated


def test_walk_key_is_depth_first_by_name():
    paths = ["a-b.py", "a/b.py", "a.py", "a/a/z.py", "B.py"]
    assert sorted(paths, key=walk_key) == ["B.py", "a/a/z.py", "a/b.py", "a-b.py", "a.py"]


@needs_rg
@pytest.mark.parametrize("limit", [1, 7, 23, 40, 500])
def test_engines_agree_at_every_limit(tree, limit):
    root = _tree(tree)
    rg = grep(root, "hit", engine="ripgrep", limit=limit)
    py = grep(root, "hit", engine="python", limit=limit)
    assert _key(rg) == _key(py)
    assert rg.truncated == (limit < 500)


@needs_rg
def test_long_output_redone_sorted(tree, monkeypatch):
    root = _tree(tree)
    calls = []
    real = grep_mod._run_rg

    def spy(*args, sort):
        calls.append(sort)
        return real(*args, sort=sort)

    monkeypatch.setattr(grep_mod, "PARALLEL_LINE_CAP", 10)
    monkeypatch.setattr(grep_mod, "_run_rg", spy)
    rg = grep(root, "hit", engine="ripgrep", limit=30)
    assert calls == [False, True]
    assert _key(rg) == _key(grep(root, "hit", engine="python", limit=30))


@needs_rg
def test_glob_filter_applies_before_the_limit(tree):
    root = _tree(tree)
    rg = grep(root, "hit", engine="ripgrep", glob="b/**/*.py", limit=3)
    py = grep(root, "hit", engine="python", glob="b/**/*.py", limit=3)
    assert _key(rg) == _key(py) and rg.matches and all(m.path.startswith("b/") for m in rg.matches)
