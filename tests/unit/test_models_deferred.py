"""ndomo's models build on first use (ndomo.schema.Schema); the warm-up builds the rest."""

from __future__ import annotations

import importlib
import threading

from ndomo import compose
from ndomo.schema import Schema, build_all


def _incomplete() -> list[str]:
    todo, out = list(Schema.__subclasses__()), []
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if not cls.__pydantic_complete__:
            out.append(f"{cls.__module__}.{cls.__qualname__}")
    return out


def test_the_warm_up_leaves_no_model_unbuilt():
    """Every model in every ndomo module can be built (a broken forward reference fails
    here, not in a user's first turn), and the warm-up's build_all builds them all."""
    for name in compose.every_module():  # what the warm-up imports
        importlib.import_module(name)
    build_all()
    assert _incomplete() == []


def test_first_use_from_two_threads_while_the_warm_up_builds():
    """The warm-up builds in a thread while the loop may use a model first: each use sees
    a complete model, never a half-built one (pydantic ≥ 2.13 locks the rebuild)."""

    def fresh() -> type[Schema]:
        class Params(Schema):
            path: str
            limit: int = 10

        return Params

    for _ in range(20):
        params = fresh()
        errors: list[BaseException] = []

        def use(cls: type[Schema] = params, errors: list[BaseException] = errors) -> None:
            try:
                assert cls.model_validate({"path": "a.py"}).model_dump() == {
                    "path": "a.py",
                    "limit": 10,
                }
            except BaseException as exc:  # noqa: BLE001 — reported by the assertion below
                errors.append(exc)

        threads = [threading.Thread(target=use) for _ in range(3)]
        threads.append(threading.Thread(target=build_all))
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
