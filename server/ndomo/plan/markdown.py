"""Turn a plan written as markdown into steps.

Shared by `commit_plan {markdown}` and plan-in-a-file, so a plan reads the same whichever
way the model wrote it. The structure used, in order of preference: a section named like
Steps/Tasks/Milestones holding a list; checkboxes; a numbered list; headings.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from pydantic import Field

from ndomo.filetypes import KNOWN
from ndomo.schema import Schema

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_CHECKBOX = re.compile(r"^(\s*)[-*+]\s+\[[ xX]\]\s+(.*\S)\s*$")
_NUMBERED = re.compile(r"^(\s*)\d{1,3}[.)]\s+(.*\S)\s*$")
_BULLET = re.compile(r"^(\s*)[-*+]\s+(?!\[[ xX]\])(.*\S)\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_STEP_PREFIX = re.compile(
    r"^(?:(?:step|phase|milestone|task)\s*\d+\s*[:.)-]?\s*|\d{1,3}[.)]\s+)", re.I
)
_SECTION = re.compile(
    r"\b(steps?|tasks?|milestones?|phases?|todo|to-do|work items?|implementation|plan)\b", re.I
)
_NOT_STEPS = re.compile(
    r"^(overview|summary|goals?|non-goals?|context|background|motivation|risks?|notes?|open questions?"
    r"|questions|references?|appendix|out of scope|scope|status|success criteria|acceptance criteria"
    r"|testing|verification|table of contents|contents|rationale|decisions?)\b",
    re.I,
)
_PATHISH = re.compile(r"`([\w@~+-][\w./@+-]*)`")
_PLAN_NAME = re.compile(r"(?:^|[^a-z])(plan|roadmap|sprint)", re.I)
_MAX_DETAILS = 2000
_KNOWN_EXT = KNOWN


class ParsedStep(Schema):
    description: str
    files: list[str] = Field(default_factory=list)
    details: str = ""


class ParsedPlan(Schema):
    title: str | None = None  # the document's first H1, when there is one
    steps: list[ParsedStep] = Field(default_factory=list)


def is_plan_filename(path: str) -> bool:
    """A markdown file whose name starts a word with plan, roadmap or sprint ('explanation.md' is not)."""
    p = PurePosixPath(path)
    return p.suffix.lower() in (".md", ".markdown") and bool(_PLAN_NAME.search(p.stem))


def files_in(text: str) -> list[str]:
    """Backquoted tokens that look like file paths (`src/a.py`, `docs/`, `README.md`), for routing."""
    out = []
    for tok in _PATHISH.findall(text):
        if tok.endswith("()") or ".." in tok:
            continue
        ext = PurePosixPath(tok).suffix.lower()
        if ("/" in tok and (ext or tok.endswith("/"))) or ext in _KNOWN_EXT:
            out.append(tok)
    return list(dict.fromkeys(out))


def _clean(text: str) -> str:
    text = _STEP_PREFIX.sub("", text.strip()).strip()
    text = re.sub(r"^\*\*(.+?)\*\*\s*[:.-]\s*", r"\1: ", text).rstrip(": ").strip()
    return text


def _lines_outside_fences(markdown: str) -> list[tuple[int, str]]:
    out, fenced = [], False
    for i, line in enumerate(markdown.splitlines()):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            out.append((i, line))
    return out


def _list_steps(lines: list[tuple[int, str]], pattern: re.Pattern[str]) -> list[ParsedStep]:
    """Items of `pattern` at their shallowest indent; deeper lines become the item's details."""
    items = [(i, m) for i, line in lines if (m := pattern.match(line))]
    if not items:
        return []
    top = min(len(m.group(1).expandtabs(4)) for _, m in items)
    steps: list[ParsedStep] = []
    current: list[str] | None = None
    for _, line in lines:
        m = pattern.match(line)
        if m and len(m.group(1).expandtabs(4)) == top:
            desc = _clean(m.group(2))
            if desc:
                steps.append(ParsedStep(description=desc))
                current = []
                continue
        if _HEADING.match(line):
            current = None  # a heading ends the list item's body
            continue
        if current is not None and steps:
            indent = len(line) - len(line.lstrip())
            if line.strip() and indent > top:
                steps[-1].details = (steps[-1].details + "\n" + line.strip()).strip()[:_MAX_DETAILS]
            elif line.strip():
                current = None
    return steps


def _sections(lines: list[tuple[int, str]]) -> list[tuple[int, str, list[tuple[int, str]]]]:
    """(level, heading text, body lines up to the next heading of the same or higher level)."""
    heads = [
        (k, len(m.group(1)), m.group(2))
        for k, (_, line) in enumerate(lines)
        if (m := _HEADING.match(line))
    ]
    out = []
    for n, (k, level, text) in enumerate(heads):
        end = len(lines)
        for k2, level2, _ in heads[n + 1 :]:
            if level2 <= level:
                end = k2
                break
        out.append((level, text, lines[k + 1 : end]))
    return out


def _heading_steps(lines: list[tuple[int, str]], title: str | None) -> list[ParsedStep]:
    sections = _sections(lines)
    if title is not None and sections and sections[0][0] == 1:
        sections = sections[1:]
    sections = [s for s in sections if not _NOT_STEPS.match(_clean(s[1]))]
    if not sections:
        return []
    level = min(s[0] for s in sections)
    steps = []
    for lvl, text, body in sections:
        if lvl != level:
            continue
        desc = _clean(text)
        if not desc:
            continue
        details = "\n".join(line.strip() for _, line in body if line.strip())[:_MAX_DETAILS]
        steps.append(ParsedStep(description=desc, details=details))
    return steps


def _with_files(steps: list[ParsedStep]) -> list[ParsedStep]:
    for s in steps:
        s.files = files_in(s.description + "\n" + s.details)
    return steps


def parse_plan_markdown(markdown: str) -> ParsedPlan:
    lines = _lines_outside_fences(markdown)
    title = None
    for _, line in lines:
        m = _HEADING.match(line)
        if m and len(m.group(1)) == 1:
            title = _clean(m.group(2)) or None
            break
        if m:
            break
    for level, text, body in _sections(lines):
        if _SECTION.search(text) and not (level == 1 and text == title):
            for pattern in (_CHECKBOX, _NUMBERED, _BULLET):
                steps = _list_steps(body, pattern)
                if steps:
                    return ParsedPlan(title=title, steps=_with_files(steps))
    for pattern in (_CHECKBOX, _NUMBERED):
        steps = _list_steps(lines, pattern)
        if steps:
            return ParsedPlan(title=title, steps=_with_files(steps))
    return ParsedPlan(title=title, steps=_with_files(_heading_steps(lines, title)))
