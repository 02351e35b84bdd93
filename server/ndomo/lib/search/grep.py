"""Regex search over the workspace: ripgrep when available, pure Python otherwise.

Both engines share the ignore rules, file order, caps and glob matcher so a
caller (or a test) cannot tell them apart except by ``engine``.
"""

from __future__ import annotations

import base64
import functools
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Literal

from ndomo.lib.search.patterns import PatternError, compile_glob, expand_braces
from ndomo.lib.search.walk import ALWAYS_SKIP, resolve_under, walk
from ndomo.schema import Schema

MAX_FILE_BYTES = 2 * 1024 * 1024
MAX_LINE_CHARS = 400
Engine = Literal["ripgrep", "python"]


class GrepError(ValueError):
    """Bad grep input (regex, glob, path) or a failing search engine."""


class Match(Schema):
    path: str
    line: int
    text: str

    def render(self) -> str:
        return f"{self.path}:{self.line}: {self.text}"


class GrepResult(Schema):
    matches: list[Match]
    truncated: bool = False
    engine: Engine

    def render(self) -> str:
        """Matches grouped by file, which costs the model fewer tokens than path:line."""
        if not self.matches:
            return "no matches"
        out: list[str] = []
        current = None
        for m in self.matches:
            if m.path != current:
                current = m.path
                out.append(current)
            out.append(f"  {m.line}: {m.text}")
        if self.truncated:
            out.append(f"… (stopped at {len(self.matches)} matches; narrow pattern, path or glob)")
        return "\n".join(out)


def clip_line(text: str) -> str:
    text = text.rstrip("\r\n")
    return text if len(text) <= MAX_LINE_CHARS else text[:MAX_LINE_CHARS] + "…"


@functools.lru_cache(maxsize=1)
def find_rg() -> str | None:
    """An ``rg`` that actually runs: PATH first, then the ripgrep wheel's copy."""
    candidates = [shutil.which("rg"), str(Path(sys.executable).parent / "rg")]
    for cand in candidates:
        if not cand or not os.access(cand, os.X_OK):
            continue
        try:
            ok = (
                subprocess.run(
                    [cand, "--version"], capture_output=True, timeout=10, check=False
                ).returncode
                == 0
            )
        except (OSError, subprocess.SubprocessError):
            ok = False
        if ok:
            return cand
    return None


def grep(
    root: Path | str,
    pattern: str,
    *,
    path: str | None = None,
    glob: str | None = None,
    limit: int = 200,
    case_insensitive: bool = False,
    include_hidden: bool = False,
    engine: Literal["auto", "ripgrep", "python"] = "auto",
    timeout_s: float = 60.0,
) -> GrepResult:
    """Lines matching ``pattern`` (Python ``re`` syntax), in walk order, at most ``limit``.

    ``path`` narrows to a folder or file under ``root``; ``glob`` filters files
    (``*.py`` at any depth, ``src/**/*.ts`` anchored). ``engine="auto"`` uses rg when
    found and falls back to Python when rg rejects a regex Python accepts
    (look-around, back-references).
    """
    if limit < 1:
        raise GrepError("limit must be at least 1")
    if not pattern:
        raise GrepError("empty search pattern")
    flags = re.IGNORECASE if case_insensitive else 0
    try:
        rx = re.compile(pattern, flags)
    except re.error as exc:
        raise GrepError(f"invalid regex {pattern!r}: {exc}") from exc
    try:
        spec = compile_glob(glob) if glob else None
    except PatternError as exc:
        raise GrepError(str(exc)) from exc
    root = Path(root).resolve()
    if not root.is_dir():
        raise GrepError(f"workspace root {str(root)!r} is not a folder")
    try:
        start, start_rel = resolve_under(root, path)
    except ValueError as exc:
        raise GrepError(str(exc)) from exc
    if not start.exists():
        raise GrepError(f"path {path!r} does not exist")

    def keep(rel: str) -> bool:
        return spec is None or spec.match_file(rel)

    if engine != "python":
        rg = find_rg()
        if rg is None and engine == "ripgrep":
            raise GrepError("ripgrep engine requested but no working rg binary was found")
        if rg is not None:
            res = _grep_rg(
                rg,
                root,
                start_rel,
                pattern,
                glob,
                keep,
                limit,
                case_insensitive,
                include_hidden,
                timeout_s,
            )
            if res is not None:
                return res
            if engine == "ripgrep":
                raise GrepError(f"rg cannot run regex {pattern!r} (Python-only syntax)")
    return _grep_py(root, start_rel, rx, keep, limit, include_hidden)


def _grep_py(root, start_rel, rx, keep, limit, include_hidden) -> GrepResult:
    matches: list[Match] = []
    for rel, abs_path in walk(root, include_hidden=include_hidden, under=start_rel or None):
        if not keep(rel):
            continue
        try:
            if abs_path.stat().st_size > MAX_FILE_BYTES:
                continue
            data = abs_path.read_bytes()
        except OSError:
            continue
        if b"\0" in data:
            continue
        lines = data.decode("utf-8", errors="replace").split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        for no, line in enumerate(lines, 1):
            if line.endswith("\r"):  # CRLF: `$` must match before the \r, as with rg --crlf
                line = line[:-1]
            if rx.search(line):
                if len(matches) >= limit:
                    return GrepResult(matches=matches, truncated=True, engine="python")
                matches.append(Match(path=rel, line=no, text=clip_line(line)))
    return GrepResult(matches=matches, truncated=False, engine="python")


def _type_globs(glob: str | None) -> list[str]:
    """Basename-only globs rg can pre-filter with; path globs are filtered afterwards."""
    if not glob:
        return []
    try:
        parts = expand_braces(glob.strip())
    except PatternError:
        return []
    if any("/" in p or ":" in p or "," in p for p in parts):
        return []
    return parts


def _hidden_or_skipped(rel: str, start_rel: str, include_hidden: bool) -> bool:
    sub = rel[len(start_rel) + 1 :] if start_rel and rel.startswith(start_rel + "/") else rel
    if start_rel == rel:
        return False
    return any(
        seg in ALWAYS_SKIP or not include_hidden and seg.startswith(".") for seg in sub.split("/")
    )


def _json_text(obj: dict) -> str:
    if "text" in obj:
        return obj["text"]
    return base64.b64decode(obj.get("bytes", "")).decode("utf-8", errors="replace")


# rg --sort path searches on one thread (2× slower on 2 cores), so rg first runs on all
# threads and the matches are put in walk order here. Past this many output lines the
# sort would cost more than it saves, and the search is redone sorted, stopping at `limit`.
PARALLEL_LINE_CAP = 5000


def walk_key(rel: str) -> tuple[str, ...]:
    """Sort key of the walk order: depth-first, names sorted within each folder."""
    return tuple(rel.split("/"))


def _grep_rg(rg, root, start_rel, pattern, glob, keep, limit, icase, hidden, timeout_s):
    """Run rg; ``None`` means rg rejected the regex and the caller should fall back."""
    started = time.monotonic()
    parallel = _run_rg(
        rg, root, start_rel, pattern, glob, keep, limit, icase, hidden, timeout_s, sort=False
    )
    if parallel != "overflow":
        return parallel
    left = max(0.1, timeout_s - (time.monotonic() - started))
    return _run_rg(rg, root, start_rel, pattern, glob, keep, limit, icase, hidden, left, sort=True)


def _rg_cmd(rg, start_rel, pattern, glob, limit, icase, hidden, sort):
    cmd = [
        rg,
        "--json",
        "--no-config",
        "--no-messages",
        "--no-require-git",
        "--no-ignore-global",
        "--crlf",
    ]
    # No --max-filesize: it costs rg a stat of every file (+30% here); the size cap is
    # checked below, only for files that matched.
    if sort:
        cmd += ["--sort", "path"]
    else:
        # Matches past the first limit+1 of one file can neither be shown nor change `truncated`.
        cmd += ["--max-count", str(limit + 1)]
    if icase:
        cmd.append("--ignore-case")
    if hidden:
        cmd.append("--hidden")
    for name in sorted(ALWAYS_SKIP):
        cmd += ["--glob", f"!{name}/"]
    types = _type_globs(glob)
    for t in types:
        cmd += ["--type-add", f"ndomo:{t}"]
    if types:
        cmd += ["--type", "ndomo"]
    cmd += ["--regexp", pattern, "--", start_rel or "."]
    return cmd


def _run_rg(rg, root, start_rel, pattern, glob, keep, limit, icase, hidden, timeout_s, *, sort):
    """One rg run. Unsorted runs return "overflow" when the output is too long to sort."""
    cmd = _rg_cmd(rg, start_rel, pattern, glob, limit, icase, hidden, sort)
    try:
        proc = subprocess.Popen(
            cmd,
            cwd=root,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    except OSError as exc:
        raise GrepError(f"cannot start rg: {exc}") from exc
    timed_out = threading.Event()

    def _expire() -> None:
        timed_out.set()
        proc.kill()

    timer = threading.Timer(timeout_s, _expire)
    timer.start()
    matches: list[Match] = []
    truncated = overflow = False
    # Paths are checked once per file: rg prints a "begin" event before a file's matches.
    path_ok: dict[str, bool] = {}
    loads = json.loads
    try:
        assert proc.stdout is not None
        for n, raw in enumerate(proc.stdout):
            if not sort and n >= PARALLEL_LINE_CAP:
                overflow = True
                break
            if not raw.startswith(b'{"type":"match"'):
                continue
            try:
                data = loads(raw)["data"]
            except (ValueError, KeyError):
                continue
            rel = _json_text(data["path"])
            ok = path_ok.get(rel)
            if ok is None:
                key = rel.replace(os.sep, "/")
                if key.startswith("./"):
                    key = key[2:]
                ok = path_ok[rel] = (
                    keep(key)
                    and not _hidden_or_skipped(key, start_rel, hidden)
                    and _small_enough(root, key)
                )
            if not ok:
                continue
            if sort and len(matches) >= limit:
                truncated = True
                break
            path = rel.replace(os.sep, "/")
            matches.append(
                Match(
                    path=path[2:] if path.startswith("./") else path,
                    line=data["line_number"],
                    text=clip_line(_json_text(data["lines"])),
                )
            )
    finally:
        timer.cancel()
        if proc.poll() is None:
            proc.kill()
        _, err = proc.communicate()
    if timed_out.is_set():
        return GrepResult(matches=_ordered(matches, sort)[:limit], truncated=True, engine="ripgrep")
    if overflow:
        return "overflow"
    if not sort and len(matches) > limit:
        matches, truncated = _ordered(matches, sort)[:limit], True
    if truncated:
        return GrepResult(matches=matches, truncated=True, engine="ripgrep")
    msg = err.decode("utf-8", errors="replace").strip()
    if proc.returncode == 2 and not matches and msg:
        # File errors are silenced by --no-messages, so stderr here is about the regex.
        if "regex" in msg.lower():
            return None
        raise GrepError(f"rg failed: {msg[:500]}")
    return GrepResult(matches=_ordered(matches, sort), truncated=False, engine="ripgrep")


def _small_enough(root: Path, rel: str) -> bool:
    try:
        return (root / rel).stat().st_size <= MAX_FILE_BYTES
    except OSError:
        return False


def _ordered(matches: list[Match], already: bool) -> list[Match]:
    """Walk order; rg lists one file's matches together and in line order."""
    if already:
        return matches
    return sorted(matches, key=lambda m: (walk_key(m.path), m.line))
