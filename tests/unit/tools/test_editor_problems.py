"""What the model reads of the editor's problems after an edit, and which errors count as new
at the end of a turn (tools/files/problems.py)."""

from __future__ import annotations

from types import SimpleNamespace

from ndomo.runtime.problems import Problem
from ndomo.tools.files.problems import EditorProblems, new_errors, render


def _p(message: str, severity: int, line: int = 0, source: str = "Pyright") -> Problem:
    at = {"line": line, "character": 0}
    return Problem.model_validate(
        {
            "message": message,
            "severity": severity,
            "source": source,
            "range": {"start": at, "end": at},
        }
    )


def test_worst_first_capped_per_file_and_in_all_with_the_rest_counted(tmp_path):
    ctx = SimpleNamespace(roots=[tmp_path])
    a, b, c = tmp_path / "a.py", tmp_path / "b.py", tmp_path / "c.py"
    many = [_p(f"warn {i}", 2, i) for i in range(12)] + [_p("boom", 1, 40), _p("a hint", 4)]
    text = render(ctx, {a: many, b: [_p(f"e{i}", 1, i) for i in range(25)], c: [_p("info", 3)]})
    lines = text.splitlines()
    assert lines[0] == "the editor now reports:"
    assert lines[1] == "- a.py line 41: error (Pyright): boom"  # errors before warnings
    assert sum(1 for x in lines if x.startswith("- a.py line")) == 10
    assert "- a.py: 3 more not shown" in lines  # 13 errors and warnings, hints left out
    assert sum(1 for x in lines if x.startswith("- b.py line")) == 10
    assert "- b.py: 15 more not shown" in lines
    assert "- c.py: no errors or warnings" in lines  # an info is neither
    assert "a hint" not in text


def test_the_total_cap_leaves_later_files_counted_only(tmp_path):
    ctx = SimpleNamespace(roots=[tmp_path])
    found = {tmp_path / f"f{i}.py": [_p(f"e{j}", 1, j) for j in range(10)] for i in range(4)}
    lines = render(ctx, found).splitlines()
    assert sum(1 for x in lines if " line " in x) == 30
    assert "- f3.py: 10 more not shown" in lines


def test_only_errors_the_turn_brought_count_as_new(tmp_path):
    f = tmp_path / "a.py"
    state = EditorProblems(
        before={f: [_p("old error", 1, 3), _p("a warning", 2)]},
        latest={
            f: [_p("old error", 1, 7), _p("old error", 1, 9), _p("a warning", 2), _p("fresh", 1)]
        },
    )
    fresh = new_errors(state)
    # the old error moved lines and is still one; a second copy of it and "fresh" are new
    assert [p.message for p in fresh[f]] == ["old error", "fresh"]
    assert new_errors(EditorProblems(before={f: []}, latest={f: [_p("w", 2)]})) == {}
