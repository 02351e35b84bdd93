"""The import graph of server/ndomo: no cycles, and the layer table of docs/architecture.md.

The graph is built with `ast` from every module, counting imports inside functions too
(a lazy import is still a dependency); only `if TYPE_CHECKING:` blocks are exempt, since
they never run. An edge goes to the module a name lives in: `from ndomo.a import b` is an
edge to `ndomo.a.b` when that is a module, else to `ndomo.a`. Third-party imports are kept
as their top-level name (`pygls`, `aiosqlite`, …) for the layer rules.
"""

from __future__ import annotations

import ast
import fnmatch
from dataclasses import dataclass
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "server"
PKG = "ndomo"


# -- the graph ---------------------------------------------------------------------------


def module_name(path: Path, src: Path) -> str:
    parts = list(path.relative_to(src).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST) -> list[tuple[int, str | None, list[str], int]]:
    """(level, module, names, line) of every import outside `if TYPE_CHECKING:` blocks."""
    found: list[tuple[int, str | None, list[str], int]] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.append((0, alias.name, [], node.lineno))
        elif isinstance(node, ast.ImportFrom):
            found.append((node.level, node.module, [a.name for a in node.names], node.lineno))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def _resolve(mod: str, is_pkg: bool, level: int, target: str | None) -> str:
    if level == 0:
        return target or ""
    base = mod.split(".") if is_pkg else mod.split(".")[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join([*base, target] if target else base)


def import_graph(src: Path = SRC, pkg: str = PKG) -> dict[str, set[str]]:
    """Module → what it imports: our modules by full name, others by top-level name."""
    files = {module_name(p, src): p for p in sorted((src / pkg).rglob("*.py"))}
    graph: dict[str, set[str]] = {}
    for mod, path in files.items():
        edges: set[str] = set()
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for level, target, names, _line in _imports(tree):
            full = _resolve(mod, path.name == "__init__.py", level, target)
            if full.split(".")[0] != pkg:
                edges.add(full.split(".")[0])
                continue
            subs = [f"{full}.{n}" for n in names if f"{full}.{n}" in files]
            edges.update(subs)
            if not names or len(subs) < len(names):  # a name defined in `full` itself
                while full not in files and "." in full:
                    full = full.rsplit(".", 1)[0]
                edges.add(full)
        edges.discard(mod)
        graph[mod] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    counter = 0

    def strong(v: str) -> None:
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in graph:
                continue
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return sorted(groups)


def cycle_path(graph: dict[str, set[str]], group: list[str]) -> list[str]:
    """One concrete loop inside a group, a → b → … → a, to print."""
    members = set(group)
    start = group[0]
    prev: dict[str, str] = {}
    todo = [start]
    while todo:
        v = todo.pop(0)
        for w in sorted(graph[v] & members):
            if w == start:
                back = [v]
                while back[-1] != start:
                    back.append(prev[back[-1]])
                return [*reversed(back), start]
            if w not in prev:
                prev[w] = v
                todo.append(w)
    return group


# -- the layer table (docs/architecture.md, "Layers") -----------------------------------


@dataclass(frozen=True)
class Rule:
    """Modules matching `importer` must not import modules matching `imported`."""

    importer: str
    imported: str
    why: str
    unless: tuple[str, ...] = ()  # importers exempt from the rule

    def broken_by(self, src: str, dst: str) -> bool:
        def match(name: str, pattern: str) -> bool:
            return name == pattern or fnmatch.fnmatchcase(name, pattern)

        return (
            match(src, self.importer)
            and match(dst, self.imported)
            and not any(match(src, u) for u in self.unless)
        )


# Feature packages under tools/ (each one `setup(plugins)`), and the libraries they share.
FEATURES = ("files", "code", "shell", "web", "interaction", "reflexes")
LIBRARIES = (
    "ndomo.lib.workspace",
    "ndomo.lib.search",
    "ndomo.lib.search.*",
    "ndomo.lib.code",
    "ndomo.lib.code.*",
)

RULES: list[Rule] = [
    Rule("ndomo*", "pygls", "pygls only in lsp/", unless=("ndomo.lsp.*",)),
    Rule("ndomo*", "lsprotocol", "lsprotocol only in lsp/", unless=("ndomo.lsp.*",)),
    Rule("ndomo*", "sqlite3", "SQL only in store/", unless=("ndomo.store.*",)),
    Rule("ndomo*", "aiosqlite", "SQL only in store/", unless=("ndomo.store.*",)),
    Rule(
        "ndomo*",
        "ndomo.compose",
        "the composition root is the top floor: only the entry script imports it",
        unless=("ndomo.__main__",),
    ),
    Rule(
        "ndomo*",
        "ndomo.lsp*",
        "nothing below the LSP layer imports it; `ndomo serve` starts it, the root wires it",
        unless=("ndomo.lsp*", "ndomo.terminal.serve", "ndomo.compose"),
    ),
    Rule(
        "ndomo*",
        "ndomo.terminal.cli",
        "only the composition root imports the CLI",
        unless=("ndomo.compose",),
    ),
    Rule(
        "ndomo.runtime*",
        "ndomo.agents.loader",
        "the runtime reaches agents through app.load_agents()",
        # `ndomo run` lists the agents for its --help, before any App exists
        unless=("ndomo.terminal.run",),
    ),
    Rule("ndomo.store*", "ndomo.runtime*", "the store knows no runtime"),
    Rule("ndomo.store*", "ndomo.tools*", "the store knows no tools"),
    Rule("ndomo.store*", "ndomo.agents*", "the store knows no agents"),
    Rule("ndomo.store*", "ndomo.modes*", "the store knows no modes"),
    Rule("ndomo.llm*", "ndomo.runtime*", "llm/ knows nothing of the runtime"),
    Rule("ndomo.llm*", "ndomo.store*", "llm/ knows nothing of the store"),
    Rule("ndomo.llm*", "ndomo.tools*", "llm/ knows nothing of the tools"),
    Rule("ndomo.llm*", "ndomo.agents*", "llm/ knows nothing of the agents"),
    Rule("ndomo.security*", "ndomo.runtime*", "security/ is pure logic"),
    Rule("ndomo.security*", "ndomo.agents*", "security/ knows no agents"),
    Rule("ndomo.security*", "ndomo.tools*", "security/ knows no tools"),
    Rule("ndomo.security*", "ndomo.modes*", "security/ knows no modes"),
    Rule("ndomo.security*", "ndomo.store*", "security/ knows no store"),
    *(
        Rule(lib, f"ndomo.{layer}*", "a library under lib/ holds primitives, not features")
        for lib in LIBRARIES
        for layer in ("agents", "modes", "store", "plan", "features", "tools")
    ),
    Rule("ndomo.tools*", "ndomo.modes*", "tools know modes only through the fence"),
    Rule("ndomo.tools*", "ndomo.plan*", "tools know the plan feature only through the store"),
    *(
        Rule(
            f"ndomo.tools.{a}*",
            f"ndomo.tools.{b}*",
            "feature packages under tools/ do not import each other (shared code: a library)",
        )
        for a in FEATURES
        for b in FEATURES
        if a != b
    ),
    *(
        Rule(
            f"ndomo.modes.{a}*",
            f"ndomo.modes.{b}*",
            "a mode is one folder: modes do not import each other",
        )
        for a in ("discussion", "brainstorming", "autopilot")
        for b in ("discussion", "brainstorming", "autopilot")
        if a != b
    ),
]


def layer_breaks(graph: dict[str, set[str]], rules: list[Rule] = RULES) -> list[str]:
    return sorted(
        f"{src} imports {dst}: {rule.why}"
        for src, dsts in graph.items()
        for dst in dsts
        for rule in rules
        if rule.broken_by(src, dst)
    )


def test_no_import_cycles() -> None:
    graph = import_graph()
    found = cycles(graph)
    assert not found, "import cycles:\n" + "\n".join(
        " → ".join(cycle_path(graph, g)) + f"   (group of {len(g)})" for g in found
    )


def test_layer_table_holds() -> None:
    breaks = layer_breaks(import_graph())
    assert not breaks, "layer breaks:\n" + "\n".join(breaks)


# -- the checker can fail ----------------------------------------------------------------


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_checker_finds_a_cycle_through_a_lazy_import(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "ndomo/__init__.py": "",
            "ndomo/a.py": "from ndomo import b\n",
            "ndomo/b.py": "def f():\n    from ndomo.c import x\n",
            "ndomo/c.py": "from typing import TYPE_CHECKING\nfrom . import a\nx = 1\n",
            "ndomo/d.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ndomo import a\n",
        },
    )
    graph = import_graph(tmp_path)
    assert graph["ndomo.b"] == {"ndomo.c"}
    assert graph["ndomo.d"] == {"typing"}  # the TYPE_CHECKING import is not an edge
    assert cycles(graph) == [["ndomo.a", "ndomo.b", "ndomo.c"]]
    assert cycle_path(graph, ["ndomo.a", "ndomo.b", "ndomo.c"]) == [
        "ndomo.a",
        "ndomo.b",
        "ndomo.c",
        "ndomo.a",
    ]


def test_checker_finds_a_layer_break(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "ndomo/__init__.py": "",
            "ndomo/runtime/__init__.py": "",
            "ndomo/runtime/run.py": "def f():\n    import pygls.server\n    from ndomo.lsp import host\n",
            "ndomo/lsp/__init__.py": "",
            "ndomo/lsp/host.py": "import pygls\n",
            "ndomo/tools/__init__.py": "",
            "ndomo/tools/files/__init__.py": "from ndomo.plan.commit import c\n",
            "ndomo/plan/__init__.py": "",
            "ndomo/plan/commit.py": "import sqlite3\nc = 1\n",
        },
    )
    assert layer_breaks(import_graph(tmp_path)) == [
        "ndomo.plan.commit imports sqlite3: SQL only in store/",
        "ndomo.runtime.run imports ndomo.lsp.host: "
        "nothing below the LSP layer imports it; `ndomo serve` starts it, the root wires it",
        "ndomo.runtime.run imports pygls: pygls only in lsp/",
        "ndomo.tools.files imports ndomo.plan.commit: "
        "tools know the plan feature only through the store",
    ]
