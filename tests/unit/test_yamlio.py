"""YAML through libyaml reads what the pure parser reads: the same data, the same node
lines (agent and config problems point at them) and the same error marks."""

from __future__ import annotations

import pytest
import yaml

from ndomo.lib import yamlio

TEXTS = [
    "description: a planner\nmode: discussion\npermission:\n  bash: ask\n  edit: deny\n",
    "a: yes\nb: on\nc: 0o17\nd: 2026-12-04\ne: ~\nf: [1, 2.5, 'x']\n",
    "dup: 1\ndup: 2\nnested:\n  - name: one\n    value: |\n      two lines\n      of text\n",
    "",
]
BROKEN = ["a: [1, 2\nb: 3\n", "key: value\n  bad indent: here\n", "- a\nb: c\n"]


def test_libyaml_is_used_where_pyyaml_has_it():
    if yaml.__with_libyaml__:
        assert yamlio.SafeLoader is yaml.CSafeLoader
    else:
        assert yamlio.SafeLoader is yaml.SafeLoader


def _lines(node):
    if node is None:
        return None
    if isinstance(node, yaml.MappingNode):
        return [(k.value, k.start_mark.line, _lines(v)) for k, v in node.value]
    if isinstance(node, yaml.SequenceNode):
        return [(_lines(v), v.start_mark.line) for v in node.value]
    return node.value


@pytest.mark.parametrize("text", TEXTS)
def test_same_data_and_node_lines_as_the_pure_parser(text):
    assert yamlio.safe_load(text) == yaml.safe_load(text)
    assert _lines(yamlio.compose(text)) == _lines(yaml.compose(text))


@pytest.mark.parametrize("text", BROKEN)
def test_same_error_line_as_the_pure_parser(text):
    with pytest.raises(yaml.YAMLError) as fast:
        yamlio.safe_load(text)
    with pytest.raises(yaml.YAMLError) as pure:
        yaml.safe_load(text)
    mark = lambda e: (getattr(e, "problem_mark", None) or e.context_mark).line  # noqa: E731
    assert mark(fast.value) == mark(pure.value)
