"""The review's hunks of one file and what rejecting some of them leaves (pure)."""

from __future__ import annotations

import itertools

import pytest

from ndomo.features.review.hunks import ABSENT, content_hash, diff, revert, split_lines

OLD = b"one\ntwo\nthree\nfour\nfive\nsix\nseven\n"
NEW = b"one\nTWO\nthree\nfour\nfive\nseven\neight\n"


def test_each_change_is_one_hunk_with_its_lines():
    fd = diff(OLD, NEW)
    assert fd.status == "modified"
    got = [(c.index, c.i1, c.i2, c.j1, c.j2, c.removed, c.added) for c in fd.changes]
    assert got == [
        (1, 1, 2, 1, 2, ["two"], ["TWO"]),
        (2, 5, 6, 5, 5, ["six"], []),
        (3, 7, 7, 6, 7, [], ["eight"]),
    ]


@pytest.mark.parametrize(
    "rejected", [set(s) for n in range(4) for s in itertools.combinations((1, 2, 3), n)]
)
def test_rejecting_a_subset_puts_back_exactly_those_hunks(rejected):
    fd = diff(OLD, NEW)
    out = revert(fd, OLD, NEW, rejected)
    lines = split_lines(out.decode())
    assert ("two\n" in lines) == (1 in rejected) and ("TWO\n" in lines) == (1 not in rejected)
    assert ("six\n" in lines) == (2 in rejected)
    assert ("eight\n" in lines) == (3 not in rejected)
    if rejected == {1, 2, 3}:
        assert out == OLD
    if not rejected:
        assert out == NEW


def test_line_endings_and_a_missing_last_newline_survive():
    old = b"a\r\nb\r\nc"
    new = b"a\r\nB\r\nc"
    fd = diff(old, new)
    assert [c.removed for c in fd.changes] == [["b"]]  # shown without its ending
    assert revert(fd, old, new, {1}) == old
    assert split_lines("x\ny") == ["x\n", "y"] and split_lines("") == []


def test_created_deleted_and_binary_files_are_one_whole_file_hunk():
    created = diff(None, b"new\n")
    assert created.status == "created" and created.changes[0].added == ["new"]
    assert revert(created, None, b"new\n", {1}) is None  # rejected: no file
    deleted = diff(b"old\n", None)
    assert deleted.status == "deleted" and deleted.changes[0].removed == ["old"]
    assert revert(deleted, b"old\n", None, {1}) == b"old\n"
    binary = diff(b"\0\1", b"\0\2")
    assert binary.status == "binary" and len(binary.changes) == 1
    assert revert(binary, b"\0\1", b"\0\2", {1}) == b"\0\1"
    assert revert(binary, b"\0\1", b"\0\2", set()) == b"\0\2"


def test_the_hash_tells_a_missing_file_from_an_empty_one():
    assert content_hash(None) == ABSENT
    assert content_hash(b"") != ABSENT and content_hash(b"") != content_hash(b"x")
