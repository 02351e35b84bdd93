import pytest

from ndomo.lib.code import file_map, find_references, find_symbol, render_hits, render_references

WS = {
    ".gitignore": "dist/\n",
    "app/models.py": (
        "class User:\n"
        "    def save(self):\n"
        "        return store(self)\n"
        "\n"
        "class Order:\n"
        "    def save(self):\n"
        "        # save is mentioned in a comment\n"
        "        return 'save'\n"
        "\n"
        "def store(obj):\n"
        "    return obj.save()\n"
    ),
    "app/views.py": "from app.models import User\n\ndef show():\n    User().save()\n",
    "web/api.ts": "export class Client {\n  save(): void {}\n}\nnew Client().save();\n",
    "lib/geo.go": "package geo\n\ntype Point struct{}\n\nfunc (p *Point) save() {}\n",
    "scripts/tool.rb": "class Tool\n  def save\n  end\nend\nTool.new.save\n",
    "notes.txt": "call save() before exit\n",
    "dist/bundle.py": "def save(): pass\n",
    "README.md": "# Project\n## save\n",
}


def test_find_symbol_by_name_across_languages(tree):
    root = tree(WS)
    hits = find_symbol(root, "save")
    got = [(h.path, h.symbol.kind, h.symbol.qualname) for h in hits]
    assert got == [
        ("README.md", "heading", "Project.save"),
        ("app/models.py", "method", "User.save"),
        ("app/models.py", "method", "Order.save"),
        ("lib/geo.go", "method", "Point.save"),
        ("scripts/tool.rb", "method", "Tool.save"),
        ("web/api.ts", "method", "Client.save"),
    ]


def test_find_symbol_dotted_and_kind(tree):
    root = tree(WS)
    hits = find_symbol(root, "Order.save")
    assert [(h.path, h.symbol.line, h.symbol.parent) for h in hits] == [
        ("app/models.py", 6, "Order")
    ]
    assert find_symbol(root, "User", kind="class")[0].symbol.line == 1
    assert find_symbol(root, "User", kind="function") == []
    assert [h.path for h in find_symbol(root, "save", kind="method", path="app")] == [
        "app/models.py",
        "app/models.py",
    ]
    assert len(find_symbol(root, "save", limit=2)) == 2
    assert "app/models.py:6: method Order.save (L6-8)" in render_hits(hits)
    with pytest.raises(ValueError, match="unknown symbol kind"):
        find_symbol(root, "save", kind="widget")
    with pytest.raises(ValueError):
        find_symbol(root, " ")


def test_find_symbol_nested_dotted_suffix(tree):
    root = tree({"m.py": "class A:\n    class B:\n        def run(self):\n            pass\n"})
    assert [h.symbol.qualname for h in find_symbol(root, "B.run")] == ["A.B.run"]
    assert [h.symbol.qualname for h in find_symbol(root, "A.B.run")] == ["A.B.run"]
    assert find_symbol(root, "C.run") == []


def test_find_references_identifiers_only(tree):
    root = tree(WS)
    refs = find_references(root, "save")
    got = {(r.path, r.line, r.is_definition) for r in refs}
    # comment and string on lines 7-8 of models.py are not references
    assert {(p, ln) for p, ln, _ in got if p == "app/models.py"} == {
        ("app/models.py", 2),
        ("app/models.py", 6),
        ("app/models.py", 11),
    }
    assert ("app/models.py", 2, True) in got and ("app/models.py", 11, False) in got
    assert ("app/views.py", 4, False) in got
    assert ("web/api.ts", 2, True) in got and ("web/api.ts", 4, False) in got
    assert ("lib/geo.go", 5, True) in got
    # text fallback: word boundary regex, definition line flagged by the regex outline
    assert ("scripts/tool.rb", 2, True) in got and ("scripts/tool.rb", 5, False) in got
    assert ("notes.txt", 1, False) in got
    assert not any(r.path.startswith("dist/") for r in refs)
    ts_ref = next(r for r in refs if r.path == "web/api.ts" and r.line == 4)
    assert ts_ref.column == 14 and ts_ref.text == "new Client().save();"
    assert "[definition]" in render_references(refs)


def test_find_references_dotted_and_limit(tree):
    root = tree(WS)
    refs = find_references(root, "User.save", limit=3)
    assert len(refs) == 3
    assert "stopped at 3" in render_references(refs, limit=3)
    assert find_references(root, "nothing_like_this") == []
    assert render_references([]) == "no references found"


def test_find_references_word_boundary(tree):
    root = tree({"a.py": "saver = 1\nsave = 2\nx = save + saver\n"})
    assert [(r.line, r.is_definition) for r in find_references(root, "save")] == [
        (2, True),
        (3, False),
    ]


def test_file_map_counts_and_render(tree):
    root = tree(
        WS
        | {"app/deep/er/est/x.py": "def a(): pass\ndef b(): pass\n", "logo.png": b"\x89PNG\x00\x00"}
    )
    fm = file_map(root, depth=3)
    by_folder = {f.path: {e.name: e.symbols for e in f.files} for f in fm.folders}
    assert by_folder["app"] == {"models.py": 5, "views.py": 1}
    assert by_folder[""]["notes.txt"] is None and by_folder[""]["logo.png"] is None
    assert "dist" not in by_folder
    assert [(c.path, c.files, c.symbols) for c in fm.collapsed] == [("app/deep/er", 1, 2)]
    text = fm.render()
    assert "  app/\n    models.py (5)\n    views.py (1)\n" in text
    assert "er/ … 1 files, 2 symbols" in text
    assert len(fm.render(max_chars=60)) < 200 and "left out" in fm.render(max_chars=60)


def test_file_map_sub_path_and_depth(tree):
    root = tree(WS)
    fm = file_map(root, path="app", depth=1)
    assert [f.path for f in fm.folders] == ["app"]
    assert fm.render().startswith("app/\n  models.py (5)")
    with pytest.raises(ValueError):
        file_map(root, path="missing")
    with pytest.raises(ValueError):
        file_map(root, depth=0)
