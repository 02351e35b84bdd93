"""The typed seams: App's closables and per-class instances, typed listeners, per-turn
state, the one path-naming, validation-message and extension-table implementations."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict, ValidationError

from ndomo import compose
from ndomo.app import App
from ndomo.filetypes import GRAMMARS, KNOWN, STACKS
from ndomo.listeners import Listeners
from ndomo.runtime.context import TurnContext, TurnRequest
from ndomo.runtime.host import BaseHost
from ndomo.runtime.plugins import build_plugins
from ndomo.runtime.runtime import Runtime
from ndomo.security.paths import workspace_name
from ndomo.validation import describe, problems


class Closer:
    def __init__(self, log: list[str], name: str, fail: bool = False) -> None:
        self.log, self.name, self.fail = log, name, fail

    async def aclose(self) -> None:
        self.log.append(self.name)
        if self.fail:
            raise RuntimeError(f"{self.name} broke")


async def test_app_closes_what_registered_in_order_even_after_a_failure(tmp_path, caplog):
    app = App(tmp_path)
    closed: list[str] = []
    app.close_with(Closer(closed, "a", fail=True))
    app.close_with(Closer(closed, "b"))
    with caplog.at_level(logging.ERROR, "ndomo"):
        await app.aclose()
    assert closed == ["a", "b"]
    assert "a broke" in caplog.text
    await app.aclose()  # closed once: a second close does nothing more
    assert closed == ["a", "b"]


async def test_app_instance_is_one_per_class_and_closed_with_the_app(tmp_path):
    app = App(tmp_path)
    closed: list[str] = []

    class Served(Closer):
        pass

    made = app.instance(Served, lambda: Served(closed, "served"))
    assert app.instance(Served, lambda: Served(closed, "other")) is made
    assert app.existing(Served) is made and app.existing(Closer) is None
    await app.aclose()
    assert closed == ["served"]


async def test_runtime_of_builds_once_and_is_closed_with_the_app(tmp_path):
    app = App(tmp_path)
    assert app.existing(Runtime) is None
    rt = Runtime.of(app, compose.plugins())  # alone in a run, no front end wired the default
    assert app.existing(Runtime) is rt and Runtime.of(app) is rt
    assert rt in app._closables
    await app.aclose()


async def test_app_loads_agents_once(tmp_path):
    app = App(tmp_path)
    agents = await app.load_agents()
    assert "craftsman" in agents.agents
    assert await app.load_agents() is agents is app.agents


async def test_listeners_tell_everyone_even_when_one_fails(caplog):
    heard: list[int] = []

    async def broken(n: int) -> None:
        raise ValueError("no")

    async def good(n: int) -> None:
        heard.append(n)

    listeners: Listeners[[int]] = Listeners("number")
    listeners.add(broken)
    listeners.add(good)
    with caplog.at_level(logging.ERROR, "ndomo.listeners"):
        await listeners.notify(7)
    assert heard == [7]
    assert "number listener" in caplog.text and "broken" in caplog.text
    listeners.remove(broken)
    assert len(listeners) == 1


async def test_listeners_may_be_plain_functions_and_answer():
    asked: Listeners[[int]] = Listeners("double", failed=lambda exc, n: f"failed on {n}")

    def broken(n: int) -> int:
        raise ValueError("no")

    async def double(n: int) -> int:
        return 2 * n

    asked.add(lambda n: None)  # no answer: left out
    asked.add(broken)
    asked.add(double)
    assert broken in asked
    assert await asked.notify(4) == ["failed on 4", 8]


async def test_turn_state_is_per_class_and_per_turn(tmp_path):
    app = App(tmp_path)
    rt = Runtime(app, build_plugins([]))

    def ctx() -> TurnContext:
        from ndomo.runtime.context import SessionState

        return TurnContext(
            app=app,
            runtime=rt,
            host=BaseHost(),
            request=TurnRequest(prompt="x"),
            session=SessionState(id="s", mode="autopilot", agent="craftsman"),
            mode="autopilot",
            agent_name="craftsman",
        )

    class Counter:
        n = 0

    one, two = ctx(), ctx()
    one.instance(Counter, Counter).n += 1
    assert one.instance(Counter, Counter).n == 1
    assert two.existing(Counter) is None
    await app.aclose()


def test_workspace_name(tmp_path):
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    assert workspace_name(root / "src" / "a.py", [root]) == "src/a.py"
    assert workspace_name(root, [root]) == "."
    assert workspace_name("src\\b.py", [root]) == "src/b.py"  # as the model wrote it
    outside = tmp_path / "elsewhere.txt"
    assert workspace_name(outside, [root]) == outside.as_posix()
    link = tmp_path / "link"
    link.symlink_to(root)
    assert workspace_name(link / "src" / "a.py", [root]) == "src/a.py"


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid")
    count: int


def _error(raw: dict) -> ValidationError:
    with pytest.raises(ValidationError) as info:
        Params.model_validate(raw)
    return info.value


def test_validation_message():
    exc = _error({"count": "x", "ghost": 1})
    assert describe(exc) == (
        "count: Input should be a valid integer, unable to parse string as an integer; "
        "ghost: unknown argument"
    )
    assert describe(exc, unknown="unknown parameter").endswith("ghost: unknown parameter")
    assert problems(_error({}))[0] == ("count", "Field required")


def test_one_extension_table_feeds_routing_grammars_and_prose():
    from ndomo.agents.routing import EXTENSION_STACKS
    from ndomo.lib.code.languages import EXTENSIONS, language_for

    assert EXTENSION_STACKS is STACKS and EXTENSIONS is GRAMMARS
    assert set(STACKS) <= KNOWN and set(GRAMMARS) <= KNOWN
    assert STACKS[".tsx"] == "js" and language_for("a/b.TSX") == "tsx"
    assert ".md" in KNOWN and ".md" not in STACKS


def test_no_services_locator_left():
    """Typed attributes replaced the string-keyed `app.services`."""
    assert not hasattr(App(Path.cwd()), "services")
