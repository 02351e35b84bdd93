"""Reading the editor's `ndomo/diagnostics` answer (lsp/host.py): what is kept, cut, skipped."""

from __future__ import annotations

from collections import namedtuple
from pathlib import Path

from pygls.uris import from_fs_path

from ndomo.lsp.host import _problems


def test_the_answer_is_read_per_asked_file_long_messages_cut_junk_and_ndomo_own_skipped(tmp_path):
    path = tmp_path / "a b.py"  # a space: the editor may spell the uri differently
    asked = {from_fs_path(str(path)): path}
    spelled = "file://" + str(path)  # unencoded space
    answer = {
        "items": [
            {
                "uri": spelled,
                "diagnostics": [
                    {"message": "x" * 9000, "source": "s" * 300, "severity": 1},
                    {"message": "plan task", "source": "ndomo", "severity": 3},
                    {"message": 3},
                    "junk",
                ],
            },
            {"uri": "file:///elsewhere.py", "diagnostics": [{"message": "not asked"}]},
        ]
    }
    (found,) = _problems(answer, asked).items()
    assert found[0] == path
    assert [(len(p.message), len(p.source or "")) for p in found[1]] == [(4000, 200)]


def test_an_answer_that_is_not_one_is_no_report(tmp_path):
    asked = {from_fs_path(str(tmp_path / "a.py")): tmp_path / "a.py"}
    assert _problems(None, asked) is None
    assert _problems({"a.py": []}, asked) is None  # the old keyed-by-uri shape
    assert _problems([1, 2], asked) is None
    # nothing reported for an asked file: an empty list (the model reads "no errors")
    assert _problems({"items": []}, asked) == {tmp_path / "a.py": []}


def test_pygls_named_tuples_are_read_like_json(tmp_path):
    path = tmp_path / "a.py"
    uri = from_fs_path(str(path))
    Obj = namedtuple("Object", ["uri", "diagnostics"])
    Diag = namedtuple("Object", ["message", "severity"])
    Answer = namedtuple("Object", ["items"])
    found = _problems(Answer([Obj(uri, [Diag("boom", 1)])]), {uri: path})
    assert [(p.message, p.severity) for p in found[path]] == [("boom", 1)]
    assert Path(path) in found
