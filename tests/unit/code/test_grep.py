import pytest

from ndomo.lib.search import GrepError, grep
from ndomo.lib.search.grep import MAX_FILE_BYTES, find_rg

needs_rg = pytest.mark.skipif(find_rg() is None, reason="no working rg binary")

FIXTURE = {
    ".gitignore": "ignored/\n*.gen.py\n",
    "app.py": "import os\n\ndef handler(req):\n    return Handler(req)\n# TODO: handler docs\n",
    "app.gen.py": "def handler(): pass\n",
    "ignored/x.py": "handler\n",
    "a/b.py": "handler = 1\n",
    "a-b.py": "HANDLER = 2\n",
    "src/web/.gitignore": "local.ts\n",
    "src/web/local.ts": "handler\n",
    "src/web/view.ts": "export function handler() {}\nconst x = 'Handler';\n",
    "src/web/view.tsx": "handler()\r\n",
    "docs/guide.md": "The handler is called once.\nno match here\n",
    "unicode.txt": "café handler ünïcode\n",
    "blob.bin": b"handler\x00\x01\x02handler\n",
    "node_modules/m/index.js": "handler\n",
    ".hidden/h.py": "handler\n",
}

CASES = [
    dict(pattern="handler"),
    dict(pattern="handler", case_insensitive=True),
    dict(pattern=r"^\s*def\s+\w+"),
    dict(pattern="handler", glob="*.py"),
    dict(pattern="handler", glob="src/**/*.ts"),
    dict(pattern="handler", glob="*.{ts,tsx}"),
    dict(pattern="handler", path="src"),
    dict(pattern="handler", path="src/web/view.ts"),
    dict(pattern=r"handler\(\)$"),
    dict(pattern="handler", include_hidden=True),
    dict(pattern="HANDLER|café"),
]


def _key(res):
    return [(m.path, m.line, m.text) for m in res.matches], res.truncated


@needs_rg
@pytest.mark.parametrize("kwargs", CASES, ids=lambda k: ",".join(f"{a}={b}" for a, b in k.items()))
def test_engines_agree(tree, kwargs):
    root = tree(FIXTURE)
    rg = grep(root, engine="ripgrep", **kwargs)
    py = grep(root, engine="python", **kwargs)
    assert rg.engine == "ripgrep" and py.engine == "python"
    assert _key(rg) == _key(py)
    assert rg.matches, "every case should find something"


@pytest.mark.parametrize("engine", ["python", pytest.param("ripgrep", marks=needs_rg)])
def test_ignore_binary_and_skips(tree, engine):
    root = tree(FIXTURE)
    paths = {m.path for m in grep(root, "handler", engine=engine).matches}
    assert paths == {
        "app.py",
        "a/b.py",
        "src/web/view.ts",
        "src/web/view.tsx",
        "docs/guide.md",
        "unicode.txt",
    }
    res = grep(root, r"handler\(req\)", engine=engine)
    assert [(m.path, m.line, m.text) for m in res.matches] == [("app.py", 3, "def handler(req):")]


@pytest.mark.parametrize("engine", ["python", pytest.param("ripgrep", marks=needs_rg)])
def test_limit_truncates_in_walk_order(tree, engine):
    root = tree({f"d{i}/f.py": "hit\nhit\n" for i in range(5)})
    res = grep(root, "hit", limit=3, engine=engine)
    assert res.truncated
    assert [(m.path, m.line) for m in res.matches] == [
        ("d0/f.py", 1),
        ("d0/f.py", 2),
        ("d1/f.py", 1),
    ]
    assert "stopped at 3" in res.render()
    exact = grep(root, "hit", limit=10, engine=engine)
    assert not exact.truncated and len(exact.matches) == 10


@pytest.mark.parametrize("engine", ["python", pytest.param("ripgrep", marks=needs_rg)])
def test_large_files_streamed_with_lines_and_cut_said(tree, engine):
    long = "x" * (3 * MAX_FILE_BYTES) + "needle" + "y" * 1000
    lines = ["needle", "x" * (MAX_FILE_BYTES + 10), "second needle\r", long, "z" + "x" * len(long)]
    root = tree(
        {
            "big.txt": "\n".join(lines),
            "small.txt": "needle\n",
            "big.bin": b"needle\x00" + b"x" * (MAX_FILE_BYTES + 10),
        }
    )
    res = grep(root, "needle", engine=engine)
    assert [(m.path, m.line) for m in res.matches] == [
        ("big.txt", 1),
        ("big.txt", 3),
        ("big.txt", 4),
        ("small.txt", 1),
    ]
    assert res.matches[1].text == "second needle"
    cut = res.matches[2].text
    assert "needle" in cut and len(cut) < 500
    assert cut.startswith("…") and cut.endswith(f"(line cut: {len(long):,} characters)")
    # anchors hold at window edges: `^` only at the real line start, `$` only at its end
    assert [m.line for m in grep(root, "^x", engine=engine).matches if m.path == "big.txt"] == [
        2,
        4,
    ]
    assert [m.line for m in grep(root, "y$", engine=engine).matches] == [4]
    assert [m.line for m in grep(root, "x$", engine=engine).matches] == [2, 5]
    # a named large file is streamed too
    assert [m.line for m in grep(root, "needle", path="big.txt", engine=engine).matches] == [
        1,
        3,
        4,
    ]
    assert grep(root, "needle", limit=2, engine=engine).truncated


@pytest.mark.parametrize("pattern", ["(", "[a-", "foo\\"])
def test_bad_regex_is_clear_error(tree, pattern):
    root = tree({"a.py": "x"})
    with pytest.raises(GrepError, match="invalid regex"):
        grep(root, pattern)


@needs_rg
def test_python_only_regex_falls_back(tree):
    root = tree({"a.py": "foobar\nfoobaz\n"})
    res = grep(root, "foo(?=baz)")
    assert res.engine == "python"
    assert [m.line for m in res.matches] == [2]
    with pytest.raises(GrepError, match="rg cannot run"):
        grep(root, "foo(?=baz)", engine="ripgrep")


def test_bad_arguments(tree):
    root = tree({"a.py": "x"})
    with pytest.raises(GrepError, match="outside"):
        grep(root, "x", path="../..")
    with pytest.raises(GrepError, match="does not exist"):
        grep(root, "x", path="missing")
    with pytest.raises(GrepError):
        grep(root, "x", glob="!*.py")
    with pytest.raises(GrepError):
        grep(root, "x", limit=0)
    with pytest.raises(GrepError):
        grep(root, "")


def test_long_lines_clipped_and_render_groups(tree):
    root = tree({"a.py": "x" * 2000 + "\nx\n"})
    res = grep(root, "x", engine="python")
    assert len(res.matches[0].text) < 500
    assert res.matches[0].text.endswith("… (line cut: 2,000 characters)")
    assert res.render().splitlines()[0] == "a.py"
    assert grep(root, "nomatch", engine="python").render() == "no matches"
