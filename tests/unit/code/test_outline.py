import pytest

from ndomo.lib.code import languages, outline


def table(ol):
    return [(s.kind, s.name, s.parent) for s in ol.symbols]


PY = """import os
MAX_SIZE = 10
name = "x"


class Shape(Base):
    sides = 0

    def area(self):
        def helper():
            return 1
        return helper()

    @property
    def label(self):
        return "s"

    class Meta:
        def deep(self):
            pass


async def main():
    text = "def fake(): pass"
"""


def test_python_outline():
    ol = outline("pkg/shapes.py", PY)
    assert ol.engine == "tree-sitter" and ol.note is None
    assert table(ol) == [
        ("const", "MAX_SIZE", None),
        ("variable", "name", None),
        ("class", "Shape", None),
        ("variable", "sides", "Shape"),
        ("method", "area", "Shape"),
        ("function", "helper", "Shape.area"),
        ("method", "label", "Shape"),
        ("class", "Meta", "Shape"),
        ("method", "deep", "Shape.Meta"),
        ("function", "main", None),
    ]
    shape = ol.symbols[2]
    assert (shape.line, shape.end_line) == (6, 20)
    rendered = ol.render()
    assert "    method area L9-12" in rendered and "      function helper L10-11" in rendered


JS = """export class Store {
  items = [];
  onChange = () => {};
  add(item) { this.items.push(item); }
}
export function createStore() { function inner() {} return new Store(); }
export const VERSION = "1";
let count = 0;
const double = (x) => x * 2;
const App = () => <div>{double(1)}</div>;
"""


def test_javascript_outline():
    ol = outline("web/store.jsx", JS)
    assert table(ol) == [
        ("class", "Store", None),
        ("method", "onChange", "Store"),
        ("method", "add", "Store"),
        ("function", "createStore", None),
        ("function", "inner", "createStore"),
        ("const", "VERSION", None),
        ("variable", "count", None),
        ("function", "double", None),
        ("function", "App", None),
    ]


TS = """export interface Shape {
  area(): number;
  name: string;
}
export type Id = string | number;
export enum Color { Red, Green }
export abstract class Base implements Shape {
  abstract area(): number;
  get name(): string { return "b"; }
}
namespace Geo { export function dist(): number { return 0; } }
"""


def test_typescript_outline():
    ol = outline("src/shapes.ts", TS)
    assert table(ol) == [
        ("interface", "Shape", None),
        ("method", "area", "Shape"),
        ("type", "Id", None),
        ("enum", "Color", None),
        ("class", "Base", None),
        ("method", "area", "Base"),
        ("method", "name", "Base"),
        ("module", "Geo", None),
        ("function", "dist", "Geo"),
    ]


def test_tsx_outline():
    src = "interface Props { n: number }\nexport function View(p: Props) {\n  return <b>{p.n}</b>;\n}\n"
    ol = outline("ui/View.tsx", src)
    assert ol.engine == "tree-sitter"
    assert table(ol) == [("interface", "Props", None), ("function", "View", None)]
    assert (ol.symbols[1].line, ol.symbols[1].end_line) == (2, 4)


GO = """package geo

const Pi = 3.14

var (
	a, b = 1, 2
)

type Shape interface {
	Area() float64
}

type Point struct {
	X, Y int
}

type ID = string

func (p *Point) Move(dx int) {
	p.X += dx
}

func (p Point) Area() float64 { return 0 }

func New() *Point { return &Point{} }
"""


def test_go_outline():
    ol = outline("geo/point.go", GO)
    assert table(ol) == [
        ("const", "Pi", None),
        ("variable", "a", None),
        ("variable", "b", None),
        ("interface", "Shape", None),
        ("method", "Area", "Shape"),
        ("struct", "Point", None),
        ("type", "ID", None),
        ("method", "Move", "Point"),
        ("method", "Area", "Point"),
        ("function", "New", None),
    ]
    move = ol.symbols[7]
    assert (move.line, move.end_line) == (19, 21)
    assert "method Point.Move L19-21" in ol.render()


RS = """pub struct Point { x: i32 }

pub enum Shape { Circle, Square }

pub trait Area {
    fn area(&self) -> f64;
    fn describe(&self) -> String { String::new() }
}

impl Area for Point {
    fn area(&self) -> f64 { 0.0 }
}

impl<T> Wrapper<T> {
    pub fn new() -> Self { todo!() }
}

const MAX: u32 = 3;
static NAME: &str = "n";
type Alias = u8;

mod inner {
    pub fn helper() {}
}

fn main() {}
"""


def test_rust_outline():
    ol = outline("src/lib.rs", RS)
    assert table(ol) == [
        ("struct", "Point", None),
        ("enum", "Shape", None),
        ("interface", "Area", None),
        ("method", "area", "Area"),
        ("method", "describe", "Area"),
        ("method", "area", "Point"),
        ("method", "new", "Wrapper"),
        ("const", "MAX", None),
        ("variable", "NAME", None),
        ("type", "Alias", None),
        ("module", "inner", None),
        ("function", "helper", "inner"),
        ("function", "main", None),
    ]


def test_plain_text_fallback_for_other_languages():
    src = "class Greeter\n  def hello(name)\n    puts name\n  end\nend\n\ndef top\nend\n"
    ol = outline("lib/greeter.rb", src)
    assert ol.engine == "text"
    assert table(ol) == [
        ("class", "Greeter", None),
        ("method", "hello", "Greeter"),
        ("function", "top", None),
    ]
    assert (ol.symbols[0].line, ol.symbols[0].end_line) == (1, 5)
    assert (ol.symbols[1].line, ol.symbols[1].end_line) == (2, 4)


def test_markdown_headings_skip_code_fences():
    src = "# Guide\nintro\n## Install\n```sh\n# not a heading\n```\n### Linux\n## Use\nend\n"
    ol = outline("docs/guide.md", src)
    assert table(ol) == [
        ("heading", "Guide", None),
        ("heading", "Install", "Guide"),
        ("heading", "Linux", "Guide.Install"),
        ("heading", "Use", "Guide"),
    ]
    assert [(s.line, s.end_line) for s in ol.symbols] == [(1, 9), (3, 7), (7, 7), (8, 9)]


def test_missing_grammar_falls_back_and_says_so(monkeypatch):
    monkeypatch.setattr(
        languages, "_load", lambda lang: (None, "tree-sitter-go unavailable (ImportError: gone)")
    )
    ol = outline("main.go", GO)
    assert ol.engine == "text"
    assert "tree-sitter-go unavailable" in (ol.note or "")
    assert ("method", "Move", "Point") in table(ol)
    assert ("struct", "Point", None) in table(ol)
    assert "text fallback" in ol.render()


def test_parsers_cached_per_language():
    assert languages.parser_for("python") is languages.parser_for("python")
    assert languages.parser_for("go") is not languages.parser_for("python")


def test_broken_source_still_outlines():
    ol = outline("bad.py", "def ok():\n    pass\n\ndef broken(:\n\nclass After:\n    pass\n")
    names = [s.name for s in ol.symbols]
    assert "ok" in names and "After" in names


@pytest.mark.parametrize("path", ["a.py", "a.ts", "a.go", "a.rs", "a.txt", "a.md"])
def test_empty_text(path):
    assert outline(path, "").symbols == []
