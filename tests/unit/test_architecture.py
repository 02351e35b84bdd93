"""The import graph of server/ndomo: no cycles, and the layer table of docs/architecture.md.

The graph is built with `ast` from every module and sees every way one module depends on
another:
- import statements anywhere: at the top, inside functions (a lazy import is still a
  dependency) and inside `if TYPE_CHECKING:` blocks (a type-only import is a dependency
  of the design: two modules that name each other's types are one unit, whatever runs);
- modules named by a string. A string literal that is exactly the name of one of our
  modules (`"ndomo.tools.shell"`, or an entry-point style `"ndomo.tools.shell:setup"`)
  is an edge when it is (a) the first argument of `import_module(...)` /
  `importlib.import_module(...)` / `__import__(...)` (a relative name resolved against a
  literal `package`), or a module-level constant passed there by name; or (b) an item of
  a list, tuple or set literal, or a key or value of a dict literal, anywhere in the
  module: a table of module names is read by a loader (`FEATURES = ["ndomo.tools.shell",
  …]`). A lone string elsewhere — a logger name `getLogger("ndomo.lsp")`, the entry-point
  group `"ndomo.features"`, a command id — is not an import.

An edge goes to the module a name lives in: `from ndomo.a import b` is an edge to
`ndomo.a.b` when that is a module, else to `ndomo.a`. Third-party imports are kept as
their top-level name (`pygls`, `sqlite3`, …) for the layer rules.
"""

from __future__ import annotations

import ast
import fnmatch
import functools
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


def _imports(tree: ast.AST) -> list[tuple[int, str | None, list[str], int]]:
    """(level, module, names, line) of every import statement, wherever it is."""
    found: list[tuple[int, str | None, list[str], int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((0, alias.name, [], node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            found.append((node.level, node.module, [a.name for a in node.names], node.lineno))
    return found


IMPORTERS = ("import_module", "__import__")


def _called(call: ast.Call) -> str | None:
    f = call.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None


def _named_modules(tree: ast.Module) -> list[tuple[str, str | None]]:
    """(name, package) of every module named by a string (the rule in the module docstring)."""
    constants = {  # module-level `NAME = "..."`, for `import_module(NAME)`
        target.id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign | ast.AnnAssign)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(target, ast.Name)
    }

    def text(node: ast.expr | None) -> str | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        return constants.get(node.id) if isinstance(node, ast.Name) else None

    found: list[tuple[str, str | None]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _called(node) in IMPORTERS and node.args:
            name = text(node.args[0])
            package = next((text(k.value) for k in node.keywords if k.arg == "package"), None)
            if package is None and _called(node) == "import_module" and len(node.args) > 1:
                package = text(node.args[1])
            if name is not None:
                found.append((name, package))
        elif isinstance(node, ast.List | ast.Tuple | ast.Set | ast.Dict):
            items = node.elts if not isinstance(node, ast.Dict) else [*node.keys, *node.values]
            for item in items:
                if isinstance(item, ast.Constant) and isinstance(item.value, str):
                    found.append((item.value.split(":", 1)[0], None))
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
        is_pkg = path.name == "__init__.py"
        for level, target, names, _line in _imports(tree):
            full = _resolve(mod, is_pkg, level, target)
            if full.split(".")[0] != pkg:
                edges.add(full.split(".")[0])
                continue
            subs = [f"{full}.{n}" for n in names if f"{full}.{n}" in files]
            edges.update(subs)
            if not names or len(subs) < len(names):  # a name defined in `full` itself
                while full not in files and "." in full:
                    full = full.rsplit(".", 1)[0]
                edges.add(full)
        for name, package in _named_modules(tree):
            if name.startswith(".") and package is not None:
                level = len(name) - len(name.lstrip("."))
                name = _resolve(package, True, level, name.lstrip(".") or None)
            if name in files:  # a string naming one of our modules
                edges.add(name)
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
    """Modules matching `importer` must not import modules matching `imported`, unless the
    importer matches `unless` or the imported module matches `but`."""

    importer: str
    imported: str
    why: str
    unless: tuple[str, ...] = ()  # importers exempt from the rule
    but: tuple[str, ...] = ()  # imported modules exempt from the rule

    def broken_by(self, src: str, dst: str) -> bool:
        def match(name: str, pattern: str) -> bool:
            return name == pattern or fnmatch.fnmatchcase(name, pattern)

        return (
            match(src, self.importer)
            and match(dst, self.imported)
            and not any(match(src, u) for u in self.unless)
            and not any(match(dst, b) for b in self.but)
        )


# The floors, top to bottom. A pattern `ndomo.x*` is the module or package `x` with all it holds.
FRONT_ENDS = ("ndomo.lsp*", "ndomo.terminal*", "ndomo.acp*")
FEATURES = (
    "ndomo.features*",
    "ndomo.plan*",
    "ndomo.agents*",
    "ndomo.modes*",
    "ndomo.tools*",
)
ENGINE = "ndomo.runtime*"
# What the engine may name of the feature folders: the base every mode derives (the
# registry holds modes) and the agent definitions (a turn runs one agent).
ENGINE_NAMES = ("ndomo.modes.base", "ndomo.agents.schema", "ndomo.agents.loader")
# Agent definitions: frontmatter, loading, permissions, routing and tone — below the App,
# which loads them (`app.load_agents()`); the agent features sit above the engine.
AGENT_DEFINITIONS = (
    "ndomo.agents",
    "ndomo.agents.schema",
    "ndomo.agents.loader",
    "ndomo.agents.permissions",
    "ndomo.agents.routing",
    "ndomo.agents.tone",
)
# `terminal/args.py`: the argparse pieces the CLI and the slash commands share (flags from a
# pydantic model); a library that lives with the CLI, below the engine.
SHARED_ARGS = "ndomo.terminal.args"
TOOL_FEATURES = ("files", "code", "shell", "web", "interaction", "reflexes", "mcp")
MODES = ("discussion", "brainstorming", "autopilot")
# The store's parts: one concern of the database each. What several share is in core.py
# (and base, db, errors, models, text, owner, archive, artifacts).
STORE_PARTS = (
    "approvals",
    "checkpoints",
    "memories",
    "messages",
    "model_caps",
    "plan_ops",
    "sessions",
    "task_ops",
    "turns",
)
# The lower floors: what the engine is built on. None imports the engine, a feature or a
# front end (the App names the engine's Host protocol, below).
LOWER = (
    "ndomo.store*",
    "ndomo.llm*",
    "ndomo.security*",
    "ndomo.config",
    "ndomo.schema",
    "ndomo.validation",
    "ndomo.filetypes",
    "ndomo.errors",
    "ndomo.listeners",
    "ndomo.startup",
    "ndomo.trust",
    "ndomo.lib.search*",
    "ndomo.lib.code*",
    *AGENT_DEFINITIONS,
)

RULES: list[Rule] = [
    # third-party libraries that belong to one floor
    Rule("ndomo*", "pygls", "pygls only in lsp/", unless=("ndomo.lsp.*",)),
    Rule("ndomo*", "lsprotocol", "lsprotocol only in lsp/", unless=("ndomo.lsp.*",)),
    Rule("ndomo*", "sqlite3", "SQL only in store/", unless=("ndomo.store.*",)),
    # front ends: siblings over one engine
    Rule(
        "ndomo*",
        "ndomo.compose",
        "the composition root is the top floor: only the entry script imports it",
        unless=("ndomo.__main__",),
    ),
    Rule(
        "ndomo*",
        "ndomo.lsp*",
        "a front end is imported by no other floor; `ndomo serve` (terminal/serve.py) starts the server",
        unless=("ndomo.lsp*", "ndomo.terminal.serve", "ndomo.compose"),
    ),
    Rule(
        "ndomo*",
        "ndomo.terminal*",
        "a front end is imported by no other floor (terminal/args.py is a library: slash commands share it)",
        unless=("ndomo.terminal*", "ndomo.compose"),
        but=(SHARED_ARGS,),
    ),
    Rule(
        "ndomo*",
        "ndomo.terminal.cli",
        "only the composition root imports the CLI",
        unless=("ndomo.compose",),
    ),
    Rule("ndomo.lsp*", "ndomo.terminal*", "one front end does not import another"),
    Rule(
        "ndomo*",
        "ndomo.acp*",
        "a front end is imported by no other floor; compose registers `ndomo acp`",
        unless=("ndomo.acp*", "ndomo.compose"),
    ),
    Rule("ndomo*", "acp", "the ACP SDK only in acp/", unless=("ndomo.acp*",)),
    Rule("ndomo.acp*", "ndomo.lsp*", "one front end does not import another"),
    Rule(
        "ndomo.acp*",
        "ndomo.terminal*",
        "one front end does not import another (terminal/args.py is a library)",
        but=(SHARED_ARGS,),
    ),
    Rule("ndomo.lsp*", "ndomo.acp*", "one front end does not import another"),
    # features over the engine
    *(
        Rule(feature, front, "features do not import front ends", but=(SHARED_ARGS,))
        for feature in FEATURES
        for front in FRONT_ENDS
    ),
    # the engine: no feature, no front end
    *(
        Rule(
            ENGINE,
            feature,
            "the engine knows features only through its registries (Plugins)",
            but=ENGINE_NAMES + AGENT_DEFINITIONS,
        )
        for feature in FEATURES
    ),
    Rule(
        ENGINE, "ndomo.lib.workspace", "lib/workspace.py is the tools' file access over the engine"
    ),
    *(
        Rule(ENGINE, front, "the engine knows no front end", but=(SHARED_ARGS,))
        for front in FRONT_ENDS
    ),
    Rule(
        "ndomo.modes.base",
        "ndomo.runtime.plugins",
        "the engine's registry holds modes: Plugins.add_mode registers a mode, not the mode itself",
    ),
    # the App, under the engine
    Rule(
        "ndomo.app",
        "ndomo.runtime*",
        "the App names only the engine's Host protocol; a runtime is one of its instances",
        but=("ndomo.runtime.host", "ndomo.runtime.events"),
    ),
    Rule("ndomo.app", "ndomo.actions", "the App raises ActionError from errors.py, below actions"),
    *(
        Rule("ndomo.app", upper, "the App knows no feature and no front end")
        for upper in (*FEATURES, *FRONT_ENDS)
        if upper != "ndomo.agents*"
    ),
    Rule(
        "ndomo.app",
        "ndomo.agents*",
        "the App loads the agent definitions, never an agent feature",
        but=AGENT_DEFINITIONS,
    ),
    # the lower floors: no engine, no feature, no front end, no App
    *(
        Rule(
            low,
            upper,
            "the lower floors know nothing above them",
            but=AGENT_DEFINITIONS if upper == "ndomo.agents*" else (),
        )
        for low in LOWER
        for upper in (
            ENGINE,
            *FEATURES,
            *FRONT_ENDS,
            "ndomo.app",
            "ndomo.actions",
            "ndomo.lib.workspace",
        )
    ),
    Rule("ndomo.llm*", "ndomo.store*", "llm/ knows nothing of the store"),
    Rule("ndomo.security*", "ndomo.store*", "security/ is pure logic (plus the shell runner)"),
    Rule("ndomo.store*", "ndomo.llm*", "the store keeps rows, not model clients"),
    # libraries: no feature
    *(
        Rule("ndomo.lib*", feature, "a library under lib/ holds primitives, not features")
        for feature in FEATURES
    ),
    Rule("ndomo.lib*", "ndomo.store*", "a library under lib/ holds primitives, not the database"),
    # inside the features floor
    Rule("ndomo.tools*", "ndomo.modes*", "tools know modes only through the fence"),
    Rule("ndomo.tools*", "ndomo.plan*", "tools know the plan feature only through the store"),
    *(
        Rule(
            f"ndomo.tools.{a}*",
            f"ndomo.tools.{b}*",
            "feature packages under tools/ do not import each other (shared code: a library)",
        )
        for a in TOOL_FEATURES
        for b in TOOL_FEATURES
        if a != b
    ),
    *(
        Rule(
            f"ndomo.modes.{a}*",
            f"ndomo.modes.{b}*",
            "a mode is one folder: modes do not import each other",
        )
        for a in MODES
        for b in MODES
        if a != b
    ),
    *(
        Rule(
            f"ndomo.store.{a}",
            f"ndomo.store.{b}",
            "the store's parts do not import each other: what several share is in core.py",
        )
        for a in STORE_PARTS
        for b in STORE_PARTS
        if a != b
    ),
]


def layer_breaks(graph: dict[str, set[str]], rules: list[Rule] = RULES) -> list[str]:
    return sorted(
        {
            f"{src} imports {dst}: {rule.why}"
            for src, dsts in graph.items()
            for dst in dsts
            for rule in rules
            if rule.broken_by(src, dst)
        }
    )


@functools.cache
def _ndomo() -> dict[str, set[str]]:
    """The graph of server/ndomo, built once for the tests below (they only read it)."""
    return import_graph()


def test_no_import_cycles() -> None:
    graph = _ndomo()
    found = cycles(graph)
    assert not found, "import cycles:\n" + "\n".join(
        " → ".join(cycle_path(graph, g)) + f"   (group of {len(g)})" for g in found
    )


def test_layer_table_holds() -> None:
    breaks = layer_breaks(_ndomo())
    assert not breaks, "layer breaks:\n" + "\n".join(breaks)


def test_every_module_is_on_a_floor() -> None:
    """A new top-level module or package must be placed in the table (and the doc)."""
    placed = (
        *FRONT_ENDS,
        *FEATURES,
        ENGINE,
        *LOWER,
        "ndomo.lib*",
        "ndomo.app",
        "ndomo.actions",
        "ndomo",
        "ndomo.__main__",
        "ndomo.compose",
    )
    unplaced = [
        m for m in import_graph() if not any(m == p or fnmatch.fnmatchcase(m, p) for p in placed)
    ]
    assert not unplaced, f"modules on no floor of the layer table: {unplaced}"


# -- the checker can fail ----------------------------------------------------------------


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def _loop(graph: dict[str, set[str]]) -> list[list[str]]:
    return [cycle_path(graph, g) for g in cycles(graph)]


def test_checker_finds_a_cycle_through_a_lazy_import(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "ndomo/__init__.py": "",
            "ndomo/a.py": "from ndomo import b\n",
            "ndomo/b.py": "def f():\n    from ndomo.c import x\n",
            "ndomo/c.py": "from . import a\nx = 1\n",
        },
    )
    graph = import_graph(tmp_path)
    assert graph["ndomo.b"] == {"ndomo.c"}
    assert cycles(graph) == [["ndomo.a", "ndomo.b", "ndomo.c"]]
    assert _loop(graph) == [["ndomo.a", "ndomo.b", "ndomo.c", "ndomo.a"]]


def test_checker_finds_a_cycle_through_a_type_only_import(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "ndomo/__init__.py": "",
            "ndomo/context.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n"
                "    from ndomo.runtime import Runtime\n"
                "class Context:\n"
                "    runtime: 'Runtime'\n"
            ),
            "ndomo/runtime.py": "from ndomo.context import Context\nclass Runtime: ...\n",
            "ndomo/other.py": (
                "import typing\nif typing.TYPE_CHECKING:\n    pass\nelse:\n    from ndomo import context\n"
            ),
        },
    )
    graph = import_graph(tmp_path)
    assert graph["ndomo.context"] == {"typing", "ndomo.runtime"}
    assert graph["ndomo.other"] == {"typing", "ndomo.context"}
    assert _loop(graph) == [["ndomo.context", "ndomo.runtime", "ndomo.context"]]


def test_checker_finds_a_cycle_through_import_module(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "ndomo/__init__.py": "",
            "ndomo/loader.py": (
                "import importlib\ndef load():\n    importlib.import_module('ndomo.feature')\n"
            ),
            "ndomo/feature.py": "from ndomo import loader\n",
            "ndomo/relative.py": (
                "from importlib import import_module\nimport_module('.base', package='ndomo')\n"
            ),
            "ndomo/base.py": "TARGET = 'ndomo.relative'\n__import__(TARGET)\n",
            "ndomo/plain.py": "import logging\nlog = logging.getLogger('ndomo.feature')\n",
        },
    )
    graph = import_graph(tmp_path)
    assert graph["ndomo.loader"] == {"importlib", "ndomo.feature"}
    assert graph["ndomo.relative"] == {"importlib", "ndomo.base"}
    assert graph["ndomo.plain"] == {"logging"}  # a logger name is not an import
    assert _loop(graph) == [
        ["ndomo.base", "ndomo.relative", "ndomo.base"],
        ["ndomo.feature", "ndomo.loader", "ndomo.feature"],
    ]


def test_checker_finds_a_cycle_through_a_table_of_module_names(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "ndomo/__init__.py": "",
            "ndomo/registry.py": (
                "import importlib\n"
                "FEATURES: list[str] = ['ndomo.tools.shell', 'ndomo.nothing.here']\n"
                "GROUP = 'ndomo.tools'  # a lone string: an entry-point group, not an import\n"
                "def load():\n"
                "    for name in FEATURES:\n"
                "        importlib.import_module(name).setup()\n"
            ),
            "ndomo/points.py": "POINTS = {'shell': 'ndomo.tools.shell:setup'}\n",
            "ndomo/tools/__init__.py": "",
            "ndomo/tools/shell.py": "from ndomo.registry import load\n",
        },
    )
    graph = import_graph(tmp_path)
    assert graph["ndomo.registry"] == {"importlib", "ndomo.tools.shell"}
    assert graph["ndomo.points"] == {"ndomo.tools.shell"}
    assert _loop(graph) == [["ndomo.registry", "ndomo.tools.shell", "ndomo.registry"]]


def test_checker_finds_a_layer_break_through_a_type_only_import(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "ndomo/__init__.py": "",
            "ndomo/app.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n"
                "    from ndomo.runtime.runtime import Runtime\n"
            ),
            "ndomo/runtime/__init__.py": "",
            "ndomo/runtime/runtime.py": "",
            "ndomo/runtime/host.py": "",
            "ndomo/store/__init__.py": "",
            "ndomo/store/db.py": (
                "import typing\nif typing.TYPE_CHECKING:\n    from ndomo.app import App\n"
            ),
        },
    )
    assert layer_breaks(import_graph(tmp_path)) == [
        "ndomo.app imports ndomo.runtime.runtime: "
        "the App names only the engine's Host protocol; a runtime is one of its instances",
        "ndomo.store.db imports ndomo.app: the lower floors know nothing above them",
    ]


def test_checker_finds_a_layer_break(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "ndomo/__init__.py": "",
            "ndomo/runtime/__init__.py": "",
            "ndomo/runtime/run.py": "def f():\n    import pygls.server\n    from ndomo.lsp import host\n",
            "ndomo/runtime/slash.py": "from ndomo.terminal.args import flags\n",
            "ndomo/lsp/__init__.py": "",
            "ndomo/lsp/host.py": "import pygls\nfrom ndomo.terminal import run\n",
            "ndomo/terminal/__init__.py": "",
            "ndomo/terminal/args.py": "flags = 1\n",
            "ndomo/terminal/run.py": "",
            "ndomo/tools/__init__.py": "",
            "ndomo/tools/files/__init__.py": "from ndomo.plan.commit import c\n",
            "ndomo/plan/__init__.py": "",
            "ndomo/plan/commit.py": "import sqlite3\nc = 1\n",
            "ndomo/store/__init__.py": "",
            "ndomo/store/sessions.py": "",
            "ndomo/store/messages.py": "from ndomo.store.sessions import x\n",
        },
    )
    assert layer_breaks(import_graph(tmp_path)) == [
        "ndomo.lsp.host imports ndomo.terminal.run: "
        "a front end is imported by no other floor (terminal/args.py is a library: slash commands share it)",
        "ndomo.lsp.host imports ndomo.terminal.run: one front end does not import another",
        "ndomo.plan.commit imports sqlite3: SQL only in store/",
        "ndomo.runtime.run imports ndomo.lsp.host: "
        "a front end is imported by no other floor; `ndomo serve` (terminal/serve.py) starts the server",
        "ndomo.runtime.run imports ndomo.lsp.host: the engine knows no front end",
        "ndomo.runtime.run imports pygls: pygls only in lsp/",
        "ndomo.store.messages imports ndomo.store.sessions: "
        "the store's parts do not import each other: what several share is in core.py",
        "ndomo.tools.files imports ndomo.plan.commit: "
        "tools know the plan feature only through the store",
    ]
