"""Hook ordering, duplicate rejection, and what each hook action does to a turn."""

from __future__ import annotations

import pytest

from ndomo.runtime.hooks import (
    DuplicateHookError,
    HookAction,
    HookRegistry,
    HookResult,
    LifecycleHook,
    ModeGatedHook,
    Phase,
)


def make(
    name,
    phase=Phase.PRE_EXECUTE,
    priority=100,
    log=None,
    result=None,
    mode=None,
):
    base = ModeGatedHook if mode else LifecycleHook
    attrs = dict(phase=phase, name=name, priority=priority)
    if mode:
        attrs["mode"] = mode

    async def run(self, ctx):
        if log is not None:
            log.append(self.name)
        return result

    return type(f"H_{name}", (base,), {**attrs, "run": run})()


class Ctx:
    mode = "discussion"


async def test_order_is_priority_then_name():
    reg = HookRegistry()
    log: list[str] = []
    reg.extend(
        [
            make("c", priority=1, log=log),
            make("b", priority=50, log=log),
            make("a", priority=50, log=log),
            make("z", priority=200, log=log),
        ]
    )
    await reg.run_phase(Phase.PRE_EXECUTE, Ctx())
    assert log == ["c", "a", "b", "z"]
    assert [h.name for h in reg.ordered(Phase.PRE_EXECUTE)] == log


def test_duplicate_is_rejected():
    reg = HookRegistry()
    reg.add(make("a"))
    with pytest.raises(DuplicateHookError):
        reg.add(make("a"))
    reg.add(make("a", phase=Phase.FINALLY))  # same name, other phase: fine


def test_a_later_add_takes_its_place_in_the_order():
    reg = HookRegistry()
    reg.add(make("a"))
    assert [h.name for h in reg.ordered(Phase.PRE_EXECUTE)] == ["a"]
    reg.add(make("b", priority=1))
    assert [h.name for h in reg.ordered(Phase.PRE_EXECUTE)] == ["b", "a"]


async def test_mode_gated_hook_runs_only_in_its_mode():
    reg = HookRegistry()
    log: list[str] = []
    reg.extend([make("auto", mode="autopilot", log=log), make("disc", mode="discussion", log=log)])
    await reg.run_phase(Phase.PRE_EXECUTE, Ctx())
    assert log == ["disc"]


async def test_non_continue_result_stops_the_phase():
    reg = HookRegistry()
    log: list[str] = []
    reg.extend(
        [
            make("first", priority=1, log=log, result=HookResult(HookAction.SKIP_AGENT)),
            make("second", priority=2, log=log),
        ]
    )
    result = await reg.run_phase(Phase.PRE_EXECUTE, Ctx())
    assert result.action is HookAction.SKIP_AGENT and log == ["first"]
