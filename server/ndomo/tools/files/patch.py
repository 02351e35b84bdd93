"""Unified diffs: parse leniently (models miscount hunks), apply strictly (content must match).

Pure functions over text; the tool validates every hunk of every file before it changes
anything, so a patch applies completely or not at all.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_HUNK = re.compile(r"^@@+ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@+")
_BARE_HUNK = re.compile(r"^@@+(?:\s.*)?$")
_GIT_HEADER = re.compile(r"^diff --git ")


class PatchError(ValueError):
    """Names the file and hunk that does not fit."""


@dataclass
class Hunk:
    header: str
    old_start: int | None  # 1-based; None when the header gave no numbers
    lines: list[tuple[str, str]] = field(default_factory=list)  # (' '|'-'|'+', text)
    old_no_eol: bool = False
    new_no_eol: bool = False

    @property
    def old(self) -> list[str]:
        return [t for k, t in self.lines if k in " -"]

    @property
    def new(self) -> list[str]:
        return [t for k, t in self.lines if k in " +"]


@dataclass
class FilePatch:
    old_path: str | None  # None: /dev/null (a new file)
    new_path: str | None  # None: /dev/null (a deleted file)
    hunks: list[Hunk] = field(default_factory=list)

    @property
    def path(self) -> str:
        return self.new_path or self.old_path or ""

    @property
    def paths(self) -> list[str]:
        return list(dict.fromkeys(p for p in (self.old_path, self.new_path) if p))


def _header_path(raw: str) -> str | None:
    raw = raw.split("\t", 1)[0].strip()
    if raw.startswith('"') and raw.endswith('"') and len(raw) > 1:
        raw = raw[1:-1]
    if raw == "/dev/null":
        return None
    return raw


def _strip_prefixes(old: str | None, new: str | None) -> tuple[str | None, str | None]:
    """git's a/ and b/ prefixes go; a path that merely starts with 'a/' on one side stays."""

    def strip(p: str | None, prefix: str) -> str | None:
        return p[2:] if p and p.startswith(prefix) else p

    if (
        (old is None or old.startswith("a/"))
        and (new is None or new.startswith("b/"))
        and (old or new)
    ):
        return strip(old, "a/"), strip(new, "b/")
    return old, new


def parse_patch(text: str) -> list[FilePatch]:
    if text.lstrip().startswith("*** Begin Patch"):
        raise PatchError(
            "this is not a unified diff; send ---/+++ file headers and @@ hunks (as `git diff` prints)"
        )
    lines = text.replace("\r\n", "\n").split("\n")
    files: list[FilePatch] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            old, new = _strip_prefixes(_header_path(line[4:]), _header_path(lines[i + 1][4:]))
            if old is None and new is None:
                raise PatchError(f"line {i + 1}: both sides are /dev/null")
            if old == "" or new == "":
                raise PatchError(f"line {i + 1}: a file header without a path")
            fp = FilePatch(old, new)
            files.append(fp)
            i += 2
            while i < len(lines) and (_HUNK.match(lines[i]) or _BARE_HUNK.match(lines[i])):
                i = _parse_hunk(lines, i, fp)
            if not fp.hunks:
                raise PatchError(f"{fp.path}: no @@ hunks after the file header")
            continue
        if _HUNK.match(line) or _BARE_HUNK.match(line):
            raise PatchError(
                f"line {i + 1}: hunk {line.strip()!r} comes before any ---/+++ file header"
            )
        i += 1  # diff --git, index, mode lines and prose between files
    if not files:
        raise PatchError(
            "no file changes found: a unified diff needs '--- a/path', '+++ b/path' and '@@ -l,n +l,n @@' hunks"
        )
    return files


def _parse_hunk(lines: list[str], i: int, fp: FilePatch) -> int:
    header = lines[i]
    m = _HUNK.match(header)
    old_start = int(m.group(1)) if m else None
    old_left = (int(m.group(2)) if m.group(2) is not None else 1) if m else None
    new_left = (int(m.group(4)) if m.group(4) is not None else 1) if m else None
    hunk = Hunk(header=header.strip(), old_start=old_start)
    fp.hunks.append(hunk)
    i += 1
    counted = m is not None
    bare: list[bool] = []  # lines that were empty, i.e. a context line whose space got dropped
    while i < len(lines):
        line = lines[i]
        counts_open = counted and (old_left > 0 or new_left > 0)  # type: ignore[operator]  # counted: both counts are ints
        if line.startswith("\\"):  # "\ No newline at end of file" belongs to the previous line
            if hunk.lines:
                kind = hunk.lines[-1][0]
                if kind in " -":
                    hunk.old_no_eol = True
                if kind in " +":
                    hunk.new_no_eol = True
            i += 1
            continue
        if _HUNK.match(line) or _BARE_HUNK.match(line) or _GIT_HEADER.match(line):
            break
        if _next_file(lines, i, strict=counts_open):
            break
        if not counts_open and (line == "" or line[0] not in " -+"):
            break
        if line == "":
            kind, body = " ", ""
        elif line[0] in " -+":
            kind, body = line[0], line[1:]
        else:
            raise PatchError(
                f"{fp.path} hunk {len(fp.hunks)} ({hunk.header}): unexpected line {line[:80]!r}"
            )
        hunk.lines.append((kind, body))
        bare.append(line == "")
        if counted:
            if kind in " -":
                old_left -= 1  # type: ignore[operator]  # counted: both counts are ints
            if kind in " +":
                new_left -= 1  # type: ignore[operator]  # counted: both counts are ints
        i += 1
    while bare and bare[-1]:  # trailing empty lines separate hunks; dropping context is harmless
        bare.pop()
        hunk.lines.pop()
    if not hunk.lines:
        raise PatchError(f"{fp.path} hunk {len(fp.hunks)} ({hunk.header}) is empty")
    return i


def _next_file(lines: list[str], i: int, *, strict: bool) -> bool:
    """A '--- '/'+++ ' pair starts the next file; inside a hunk whose counts are not used up
    ('--- x' may be a removed '-- x' line) only when a hunk header follows too."""
    if not (lines[i].startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ ")):
        return False
    return not strict or (
        i + 2 < len(lines) and bool(_HUNK.match(lines[i + 2]) or _BARE_HUNK.match(lines[i + 2]))
    )


# -- applying -------------------------------------------------------------------------------


@dataclass
class _Text:
    lines: list[str]
    newline: str
    eol_at_end: bool


def _split(text: str) -> _Text:
    newline = "\r\n" if "\r\n" in text else "\n"
    body = text.replace("\r\n", "\n")
    if body == "":
        return _Text([], newline, False)
    eol = body.endswith("\n")
    lines = body.split("\n")
    if eol:
        lines.pop()
    return _Text(lines, newline, eol)


def _join(t: _Text) -> str:
    if not t.lines:
        return ""
    return t.newline.join(t.lines) + (t.newline if t.eol_at_end else "")


def _find(lines: list[str], block: list[str], lo: int, expect: int | None) -> int | None:
    """Start of `block` at or after `lo`, the one nearest the expected line; exact, then ignoring trailing blanks."""
    n = len(block)
    for same in (lambda a, b: a == b, lambda a, b: a.rstrip() == b.rstrip()):
        found = [
            s
            for s in range(lo, len(lines) - n + 1)
            if all(same(lines[s + k], block[k]) for k in range(n))
        ]
        if found:
            return min(found, key=lambda s: abs(s - expect)) if expect is not None else found[0]
    return None


def apply_file_patch(current: str | None, fp: FilePatch) -> str | None:
    """New content of one file (None: deleted). Raises PatchError naming the file and hunk."""
    name = fp.path
    if fp.old_path is None:
        if current is not None and current.strip():
            raise PatchError(f"{name}: the patch creates it but it already exists")
        current = ""
    elif current is None:
        raise PatchError(f"{fp.old_path}: the patch changes it but it does not exist")
    t = _split(current)
    pos = 0
    delta = 0  # hunk line numbers are the original file's; earlier hunks shift them
    for n, h in enumerate(fp.hunks, 1):
        where = f"{name} hunk {n} ({h.header})"
        old = h.old
        if not old:
            at = 0 if fp.old_path is None else (h.old_start or 0) + delta
            if at > len(t.lines) or at < pos:
                raise PatchError(
                    f"{where}: inserts after line {at} but the file has {len(t.lines)} lines"
                )
        else:
            expect = h.old_start - 1 + delta if h.old_start else None
            found = _find(t.lines, old, pos, expect)
            if found is None:
                first = next((ln for ln in old if ln.strip()), old[0])
                raise PatchError(
                    f"{where}: its context/removed lines do not match the file (looked for {first.strip()[:120]!r} "
                    f"from line {pos + 1}); read the file and regenerate the hunk"
                )
            at = found
        t.lines[at : at + len(old)] = h.new
        pos = at + len(h.new)
        delta += len(h.new) - len(old)
        if at + len(h.new) == len(
            t.lines
        ):  # the hunk reaches the end: its markers decide the last newline
            if h.new_no_eol:
                t.eol_at_end = False
            elif h.old_no_eol or fp.old_path is None or not current:
                t.eol_at_end = True
    if fp.new_path is None:
        if t.lines:
            raise PatchError(
                f"{name}: the patch deletes it but its hunks leave {len(t.lines)} lines"
            )
        return None
    return _join(t)
