"""`python -m tests.bench` cannot pass by accident: a missed target, a benchmark that fails to
run, or a deliberately slowed path makes it exit 1. (No timing is asserted: the slowed run
adds a sleep far above the target, which a slower machine only makes larger.)"""

from __future__ import annotations

import logging
import sys
import types

import pytest

import tests.bench.__main__ as bench
from ndomo.lsp import plan_diagnostics as pd
from ndomo.runtime.coordinator import ToolCallCoordinator
from tests.bench import overhead
from tests.bench.common import Result


@pytest.fixture(autouse=True)
def _keep_pygls_logging(monkeypatch):
    """The bench quiets pygls's logger; other tests keep its level."""
    log = logging.getLogger("pygls")
    monkeypatch.setattr(log, "level", log.level)


def _fake_bench(monkeypatch, name: str, rows=None, error: Exception | None = None) -> None:
    mod = types.ModuleType(f"tests.bench._fake_{name}")

    async def run() -> list[Result]:
        if error is not None:
            raise error
        return rows or []

    mod.run = run  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, mod.__name__, mod)
    monkeypatch.setattr(bench, "BENCHES", {name: mod.__name__})


def _row(met: bool) -> Result:
    return Result("fake", "case", 2.0, 1.0, "ms", "≤ 1 ms", met)


@pytest.mark.parametrize(
    ("rows", "error", "code"),
    [
        ([_row(True), _row(True)], None, 0),
        ([_row(True), _row(False)], None, 1),
        (None, RuntimeError("an error answer is not a sample"), 1),
    ],
)
def test_the_exit_code_says_whether_every_target_was_met(monkeypatch, capsys, rows, error, code):
    _fake_bench(monkeypatch, "fake", rows, error)
    assert bench.main(["fake"]) == code
    err = capsys.readouterr().err
    assert ("MISSED" in err) == (rows is not None and code == 1)


def test_a_deliberately_slowed_tool_call_path_makes_the_run_fail(monkeypatch, capsys):
    # the injected patch is undone after the test
    monkeypatch.setattr(ToolCallCoordinator, "run", ToolCallCoordinator.run)
    plans = getattr(pd, "FolderPlans", None) or pd.PlanDiagnosticsFeature
    monkeypatch.setattr(plans, "refresh", plans.refresh)
    monkeypatch.setattr(overhead, "N", 30)
    assert bench.main(["overhead", "--inject-delay", "5"]) == 1
    err = capsys.readouterr().err
    assert "MISSED: overhead tool call added, mean" in err


def test_the_report_states_the_runs_conditions_and_every_row(tmp_path, monkeypatch, capsys):
    from tests.bench.report import report

    _fake_bench(monkeypatch, "fake", [_row(True), _row(False)])
    out = tmp_path / "pass.json"
    assert bench.main(["fake", "--json", str(out)]) == 1
    text = report([out])
    assert "`python -m tests.bench fake`" in text and "load average (1/5/15 min)" in text
    assert "exited 1 (1 targets missed, 0 benchmarks failed to run)" in text
    assert text.count("| case | 2.00 ms | 1.00 ms | 2.00× | ≤ 1 ms |") == 2
    assert "**MISSED**" in text
