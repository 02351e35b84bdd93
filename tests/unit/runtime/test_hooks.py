"""Hook ordering, cycle and duplicate rejection, and what each hook action does to a turn."""

from __future__ import annotations

import pytest

from ndomo.runtime.hooks import (
    DuplicateHookError,
    HookAction,
    HookCycleError,
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
    before=(),
    after=(),
    log=None,
    result=None,
    mode=None,
):
    base = ModeGatedHook if mode else LifecycleHook
    attrs = dict(
        phase=phase, name=name, priority=priority, before=tuple(before), after=tuple(after)
    )
    if mode:
        attrs["mode"] = mode

    async def run(self, ctx):
        if log is not None:
            log.append(self.name)
        return result

    return type(f"H_{name}", (base,), {**attrs, "run": run})()


class Ctx:
    mode = "discussion"


async def test_order_follows_before_after_then_priority():
    reg = HookRegistry()
    log: list[str] = []
    reg.extend(
        [
            make("c", priority=1, log=log),
            make("a", priority=50, log=log),
            make("b", priority=10, after=("a",), log=log),
            make("z", priority=200, before=("c",), log=log),
        ]
    )
    await reg.run_phase(Phase.PRE_EXECUTE, Ctx())
    # z must precede c despite its priority; b must follow a
    assert log.index("z") < log.index("c")
    assert log.index("a") < log.index("b")
    # among hooks whose constraints are met, lower priority first
    assert log == ["a", "b", "z", "c"]


def test_cycle_is_rejected_at_validate():
    reg = HookRegistry()
    reg.extend([make("a", after=("b",)), make("b", after=("a",)), make("c")])
    with pytest.raises(HookCycleError, match="a, b"):
        reg.validate()


def test_duplicate_is_rejected():
    reg = HookRegistry()
    reg.add(make("a"))
    with pytest.raises(DuplicateHookError):
        reg.add(make("a"))
    reg.add(make("a", phase=Phase.FINALLY))  # same name, other phase: fine


async def test_order_is_cached_and_invalidated_on_add():
    reg = HookRegistry()
    reg.add(make("a"))
    first = reg.ordered(Phase.PRE_EXECUTE)
    assert reg.ordered(Phase.PRE_EXECUTE) is first
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
