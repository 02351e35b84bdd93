"""One composition root: only `ndomo.compose` names ndomo's features, and a new feature is
its folder plus its registration there (or an entry point, for a package outside ndomo)."""

from __future__ import annotations

import ast
import asyncio
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcInvalidParams

from ndomo import compose
from ndomo.app import App
from ndomo.lsp import warmup
from ndomo.lsp.commands import CommandsFeature
from tests import throwaway

SRC = Path(__file__).resolve().parents[2] / "server"
ROOT_MODULE = "ndomo.compose"


# -- nobody but the root loads an ndomo module by name -----------------------------------


def _named_module(node: ast.expr) -> str | None:
    """The start of the module name an argument spells, when it spells one in the source."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr) and node.values:  # f"ndomo.{x}"
        return _named_module(node.values[0])
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):  # "ndomo." + x
        return _named_module(node.left)
    return None


def _loader_name(func: ast.expr) -> str | None:
    name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
    return name if name in ("import_module", "__import__") else None


def loads_by_name(src: Path = SRC, pkg: str = "ndomo") -> list[str]:
    """`module:line` of each `import_module` / `__import__` call naming one of `pkg`'s
    modules (as the name, or as the package of a relative name), outside the root."""
    found = []
    for path in sorted((src / pkg).rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        module = ".".join(parts)
        if module == ROOT_MODULE:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if not isinstance(node, ast.Call) or not _loader_name(node.func):
                continue
            spelled = [_named_module(a) for a in node.args[:2]]
            spelled += [
                _named_module(k.value) for k in node.keywords if k.arg in ("name", "package")
            ]
            if any(s is not None and (s == pkg or s.startswith(pkg + ".")) for s in spelled):
                found.append(f"{module}:{node.lineno}")
    return found


def test_only_the_root_loads_ndomo_modules_by_name() -> None:
    assert loads_by_name() == [], "load them with `import` in ndomo/compose.py"


def test_the_check_finds_each_spelling(tmp_path: Path) -> None:
    pkg = tmp_path / "ndomo"
    (pkg / "lsp").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "compose.py").write_text('import importlib\nimportlib.import_module("ndomo.a")\n')
    (pkg / "lsp" / "__init__.py").write_text("")
    (pkg / "lsp" / "warm.py").write_text(
        "import importlib\nfrom importlib import import_module\n"
        'importlib.import_module("ndomo.features.turn")\n'
        'import_module(f"ndomo.tools.{name}")\n'
        '__import__("ndomo" + ".plan")\n'
        'importlib.import_module(".view", package="ndomo.plan")\n'
        'importlib.import_module("anthropic")\n'  # optional third-party: fine
        "importlib.import_module(grammar)\n"  # a name the source does not spell: fine
    )
    assert loads_by_name(tmp_path) == [
        "ndomo.lsp.warm:3",
        "ndomo.lsp.warm:4",
        "ndomo.lsp.warm:5",
        "ndomo.lsp.warm:6",
    ]


# -- what the root wires ------------------------------------------------------------------


def test_the_root_lists_exactly_the_modules_that_declare_actions() -> None:
    """No listed module without an action, no action declared outside a listed module
    (one imported only along the way would vanish the day that import goes)."""
    listed = {m.__name__ for m in compose.action_modules()}
    declaring = {a.handler.__module__ for a in compose.actions().all()}
    assert declaring == listed


def test_read_only_is_declared_by_the_action() -> None:
    acts = {a.name: a for a in compose.actions().all()}
    assert acts["plan.list"].read_only and acts["memory.list"].read_only
    assert acts["session.list"].read_only and acts["status"].read_only
    assert not acts["plan.approve"].read_only and not acts["memory.delete"].read_only
    assert not acts["turn"].read_only and not acts["session.new"].read_only


def test_the_moved_actions_and_tool_keep_their_names() -> None:
    modules = {a.name: a.handler.__module__ for a in compose.actions().all()}
    assert modules["session.list"] == "ndomo.features.sessions"
    assert modules["memory.list"] == modules["memory.delete"] == "ndomo.features.memory"
    assert {m for m in modules.values() if m == "ndomo.plan.actions"}
    assert all(
        n.split(".")[0] in ("plan", "task") for n, m in modules.items() if m == "ndomo.plan.actions"
    )
    handback = compose.plugins().tools.get("handback")
    assert handback is not None and handback.run.__module__ == "ndomo.tools.interaction.handback"


def test_an_installed_feature_joins_through_its_entry_point() -> None:
    """A package outside ndomo (the throwaway mode) is found by its entry point, after the
    built-in features, with no edit to ndomo."""
    code = "from ndomo import compose; print(' '.join(compose.plugins().modes))"
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=throwaway.env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    modes = done.stdout.split()
    assert modes[:3] == ["discussion", "brainstorming", "autopilot"]
    assert modes[-1] == throwaway.MODE
    assert throwaway.MODE not in compose.plugins().modes  # not installed here


HELLO = '''\
"""A feature nothing else names: one action, one tool."""

from ndomo.actions import NoParams, action
from ndomo.runtime.tools import ToolResult, tool


@action("hello", summary="Say hello", read_only=True)
async def hello(app, params: NoParams) -> dict:
    return {"hello": "world"}


@tool("greet", NoParams, description="Greet the user.")
async def greet(ctx, p: NoParams) -> ToolResult:
    return ToolResult(content="hello")


def setup(plugins) -> None:
    plugins.tools.add(greet)
'''


def _register(root_text: str) -> str:
    """The root with `features.hello` registered: as a feature and as declaring actions."""
    text = root_text.replace(
        "    from ndomo.features import builtin, checkpoints, instructions, recovery\n",
        "    from ndomo.features import builtin, checkpoints, hello, instructions, recovery\n",
    ).replace("        plan.setup,\n    ]", "        plan.setup,\n        hello.setup,\n    ]")
    text = text.replace(
        "    from ndomo.plan import view\n",
        "    from ndomo.features import hello\n    from ndomo.plan import view\n",
    ).replace("        agent_actions,\n    )", "        agent_actions,\n        hello,\n    )")
    assert text.count("hello") == 4, "the root's layout changed: update this test's edit"
    return text


def test_a_new_feature_is_its_folder_plus_its_registration_in_the_root(tmp_path: Path) -> None:
    """Copy ndomo, add a feature module and register it in the root — nothing else: its
    action is a CLI subcommand and an LSP command, its tool is in the runtime."""
    shutil.copytree(SRC / "ndomo", tmp_path / "ndomo", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "ndomo" / "features" / "hello.py").write_text(HELLO)
    root = tmp_path / "ndomo" / "compose.py"
    root.write_text(_register(root.read_text()))
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    env = {**throwaway.env(), "PYTHONPATH": str(tmp_path)}

    def python(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, *args], cwd=ws, env=env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert json.loads(python("-m", "ndomo", "hello", "--json")) == {"hello": "world"}
    code = (
        "import ndomo; from ndomo import compose; from ndomo.lsp import warmup;"
        "from ndomo.lsp.features import create_server;"
        "warmup.install(compose.server_loads()); s = create_server();"
        "print(ndomo.__file__); print('ndomo.hello' in s.protocol.fm.commands);"
        "print('greet' in compose.plugins().tools.names())"
    )
    where, command, tool = python("-c", code).split()
    assert where.startswith(str(tmp_path))  # the copy ran, not the checkout
    assert (command, tool) == ("True", "True")


async def test_only_commands_that_change_something_wake_the_listeners(tmp_path, monkeypatch):
    """The LSP commands read `Action.read_only`: `memory.list` wakes nothing (the plan
    diagnostics are not refreshed), `memory.delete` does — even when it is refused."""
    monkeypatch.setattr(warmup, "_loads", compose.server_loads())
    (tmp_path / ".git").mkdir()
    app = App(tmp_path)
    handlers, woken = {}, []

    class _Listeners:
        async def notify(self, name: str) -> None:
            woken.append(name)

    class _Server:
        command_listeners = _Listeners()

        def command(self, name):
            return lambda fn: handlers.setdefault(name, fn)

        async def wait_app(self, uri):
            return app

        def spawn(self, coro):
            return asyncio.ensure_future(coro)

    CommandsFeature(_Server()).register()
    try:
        assert await handlers["ndomo.memory.list"]({}) == []
        with pytest.raises(JsonRpcInvalidParams):  # no note 99: refused, still a write
            await handlers["ndomo.memory.delete"]({"id": 99})
        await asyncio.sleep(0)
        assert woken == ["memory.delete"]
    finally:
        await app.aclose()
