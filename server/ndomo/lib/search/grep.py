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
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Literal

from ndomo.lib.search.patterns import PatternError, compile_glob, expand_braces
from ndomo.lib.search.stream import MAX_LINE_CHARS, multiline, preview, search_large
from ndomo.lib.search.walk import ALWAYS_SKIP, resolve_under, walk
from ndomo.schema import Schema

# Files up to this size are searched whole (in memory); larger ones are streamed.
MAX_FILE_BYTES = 2 * 1024 * 1024
__all__ = ["MAX_FILE_BYTES", "MAX_LINE_CHARS", "GrepError", "GrepResult", "Match", "grep"]
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


def clip_line(text: str, start: int = 0) -> str:
    """The line cut to ``MAX_LINE_CHARS`` around ``start`` (the match), the cut said."""
    return preview(text, start)


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
    deadline = time.monotonic() + timeout_s

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
                return _with_large(res, root, rx, limit, deadline)
            if engine == "ripgrep":
                raise GrepError(f"rg cannot run regex {pattern!r} (Python-only syntax)")
    return _grep_py(root, start_rel, rx, keep, limit, include_hidden, deadline)


def _with_large(res: GrepResult, root: Path, rx, limit: int, deadline: float) -> GrepResult:
    """rg's result with the files it left to the streaming search (over MAX_FILE_BYTES)."""
    if not isinstance(res, _RgResult) or not res.large:
        return GrepResult(matches=res.matches, truncated=res.truncated, engine=res.engine)
    matches = list(res.matches)
    truncated: bool = res.truncated
    for rel in sorted(res.large, key=walk_key):
        found, stopped = search_large(root / rel, multiline(rx), limit, deadline)
        matches += [Match(path=rel, line=no, text=text) for no, text in found]
        truncated = truncated or stopped
    matches.sort(key=lambda m: (walk_key(m.path), m.line))
    if len(matches) > limit:
        matches, truncated = matches[:limit], True
    return GrepResult(matches=matches, truncated=truncated, engine=res.engine)


def _grep_py(root, start_rel, rx, keep, limit, include_hidden, deadline) -> GrepResult:
    matches: list[Match] = []
    for rel, abs_path in walk(root, include_hidden=include_hidden, under=start_rel or None):
        if not keep(rel):
            continue
        try:
            st = abs_path.stat()
            if not stat.S_ISREG(st.st_mode):
                continue
            if st.st_size > MAX_FILE_BYTES:
                found, stopped = search_large(
                    abs_path, multiline(rx), limit - len(matches) + 1, deadline
                )
                matches += [Match(path=rel, line=no, text=text) for no, text in found]
                if len(matches) > limit or stopped:
                    return GrepResult(matches=matches[:limit], truncated=True, engine="python")
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
            m = rx.search(line)
            if m:
                if len(matches) >= limit:
                    return GrepResult(matches=matches, truncated=True, engine="python")
                matches.append(Match(path=rel, line=no, text=clip_line(line, m.start())))
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
    if start_rel and _is_large(root / start_rel):
        # rg applies --max-filesize to walked files only: one named large file is streamed.
        return _RgResult(matches=[], engine="ripgrep", large=[start_rel] if keep(start_rel) else [])
    parallel = _run_rg(
        rg, root, start_rel, pattern, glob, keep, limit, icase, hidden, timeout_s, sort=False
    )
    if parallel != "overflow":
        return parallel
    left = max(0.1, timeout_s - (time.monotonic() - started))
    return _run_rg(rg, root, start_rel, pattern, glob, keep, limit, icase, hidden, left, sort=True)


class _RgResult(GrepResult):
    """rg's matches and the files it skipped for size, left to the streaming search."""

    large: list[str] = []


def _is_large(path: Path) -> bool:
    try:
        return path.is_file() and path.stat().st_size > MAX_FILE_BYTES
    except OSError:
        return False


def _rg_cmd(rg, start_rel, pattern, glob, limit, icase, hidden, sort):
    cmd = [
        rg,
        "--json",
        "--no-config",
        "--no-messages",
        "--no-require-git",
        "--no-ignore-global",
        "--crlf",
        # rg holds a whole line in memory and prints it whole in --json (which ignores
        # --max-columns): a 200 MB minified line cost GBs. Larger files are streamed
        # here instead; --debug names the files the size limit skipped.
        "--max-filesize",
        str(MAX_FILE_BYTES),
        "--debug",
    ]
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


# rg's debug line for a file over --max-filesize (crates/ignore/src/walk.rs).
# (tests/unit/code/test_grep.py's large-file test fails if a new rg words it otherwise.)
_TOO_BIG = re.compile(r"^(?:rg: )?DEBUG\|ignore::walk\|\S* ignoring (.+): (\d+) bytes$")
_LOG = re.compile(r"^(?:rg: )?(?:DEBUG|TRACE)\|")


def _read_stderr(stream, too_big: list[str], other: list[str]) -> None:
    """Drain rg's stderr (its debug log can fill the pipe) into skipped files and errors."""
    for raw in stream:
        line = raw.decode("utf-8", errors="replace").rstrip("\n")
        m = _TOO_BIG.match(line)
        if m:
            too_big.append(m.group(1))
        elif not _LOG.match(line) and len(other) < 50:
            other.append(line)


def _match_start(data: dict) -> int:
    """Character offset of the first submatch in the line (rg gives bytes)."""
    subs = data.get("submatches") or []
    if not subs:
        return 0
    start = subs[0].get("start", 0)
    line = _json_text(data["lines"])
    return len(line.encode("utf-8", errors="replace")[:start].decode("utf-8", errors="ignore"))


def _norm(rel: str) -> str:
    key = rel.replace(os.sep, "/")
    return key[2:] if key.startswith("./") else key


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
    too_big: list[str] = []
    errors: list[str] = []
    drain = threading.Thread(target=_read_stderr, args=(proc.stderr, too_big, errors), daemon=True)
    drain.start()
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
                key = _norm(rel)
                ok = path_ok[rel] = keep(key) and not _hidden_or_skipped(key, start_rel, hidden)
            if not ok:
                continue
            if sort and len(matches) >= limit:
                truncated = True
                break
            matches.append(
                Match(
                    path=_norm(rel),
                    line=data["line_number"],
                    text=clip_line(_json_text(data["lines"]), _match_start(data)),
                )
            )
    finally:
        timer.cancel()
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        drain.join()
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()
        proc.stderr.close()
    large = [
        key
        for key in dict.fromkeys(_norm(p) for p in too_big)
        if keep(key) and not _hidden_or_skipped(key, start_rel, hidden)
    ]
    if timed_out.is_set():
        return _RgResult(
            matches=_ordered(matches, sort)[:limit], truncated=True, engine="ripgrep", large=[]
        )
    if overflow:
        return "overflow"
    if not sort and len(matches) > limit:
        matches, truncated = _ordered(matches, sort)[:limit], True
    if truncated:
        return _RgResult(matches=matches, truncated=True, engine="ripgrep", large=large)
    msg = "\n".join(errors).strip()
    if proc.returncode == 2 and not matches and msg:
        # File errors are silenced by --no-messages, so stderr here is about the regex.
        if "regex" in msg.lower():
            return None
        raise GrepError(f"rg failed: {msg[:500]}")
    return _RgResult(
        matches=_ordered(matches, sort), truncated=False, engine="ripgrep", large=large
    )


def _ordered(matches: list[Match], already: bool) -> list[Match]:
    """Walk order; rg lists one file's matches together and in line order."""
    if already:
        return matches
    return sorted(matches, key=lambda m: (walk_key(m.path), m.line))
