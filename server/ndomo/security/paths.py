"""Workspace path confinement for file tools.

A tool's path argument comes from the model, so it is treated as hostile: it is
resolved component by component (following symlinks ourselves) so that a symlink
anywhere in the path, an escaping `..`, or a detour through `/proc` is seen and
refused before any file is touched. Paths that do not exist yet (for `write`) are
resolved through their deepest existing ancestor.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable, Sequence
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pathspec

_MAX_SYMLINKS = 40
_WINDOWS_DRIVE = re.compile(r"^[A-Za-z]:")
_PROC = "/proc"


class PathRefused(Exception):
    """A path argument that must not be used; `.message` is shown to the model."""

    def __init__(self, message: str, *, raw: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.raw = raw


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _real_roots(roots: Sequence[os.PathLike | str]) -> list[str]:
    if not roots:
        raise PathRefused("no workspace folder is open, so no file path can be used")
    out = []
    for r in roots:
        r = os.fspath(r)
        if not os.path.isabs(r):
            raise PathRefused(f"workspace folder {r!r} is not an absolute path")
        out.append(os.path.realpath(r))
    return out


def _check_text(raw: str) -> None:
    """Refusals that need no filesystem access."""
    if raw.strip() == "":
        raise PathRefused("empty path", raw=raw)
    if "\x00" in raw:
        raise PathRefused("path contains a NUL byte", raw=raw)
    if raw.startswith("~"):
        raise PathRefused(
            f"home-relative paths ({raw.split('/', 1)[0]}) are not allowed; use a path inside the workspace",
            raw=raw,
        )
    if raw.startswith("\\\\") or raw.startswith("//"):
        raise PathRefused(f"UNC/network paths are not allowed: {raw!r}", raw=raw)
    if _WINDOWS_DRIVE.match(raw):
        raise PathRefused(
            f"Windows drive paths are not allowed: {raw!r}; use a workspace-relative path", raw=raw
        )
    if os.path.isabs(raw) and _under(os.path.normpath(raw), _PROC):
        raise PathRefused(f"paths through /proc are not allowed: {raw!r}", raw=raw)


class _Walker:
    """A realpath clone that records every directory it passes and every symlink it follows."""

    def __init__(self, roots: list[str], raw: str) -> None:
        self.roots = roots
        self.raw = raw
        self.hops = 0

    def inside(self, path: str) -> bool:
        return any(_under(path, r) for r in self.roots)

    def _proc_check(self, path: str, via: str) -> None:
        if _under(path, _PROC):
            raise PathRefused(
                f"path {self.raw!r} goes through /proc (via {via}); not allowed", raw=self.raw
            )

    def walk(self, start: str, rest: str, *, confined: bool) -> str:
        """Resolve `rest` from `start`. When confined, every step must stay inside a root."""
        path = start
        if os.path.isabs(rest):
            path = "/"
        for name in rest.split("/"):
            if name in ("", "."):
                continue
            if name == "..":
                path = os.path.dirname(path) or "/"
                if confined and not self.inside(path):
                    raise PathRefused(
                        f"'..' in {self.raw!r} escapes the workspace folder", raw=self.raw
                    )
                continue
            new = path.rstrip("/") + "/" + name
            self._proc_check(new, new)
            try:
                is_link = stat.S_ISLNK(os.lstat(new).st_mode)
            except OSError:
                is_link = False
            if not is_link:
                path = new
                continue
            self.hops += 1
            if self.hops > _MAX_SYMLINKS:
                raise PathRefused(
                    f"too many levels of symbolic links in {self.raw!r}", raw=self.raw
                )
            try:
                target = os.readlink(new)
            except OSError as exc:
                raise PathRefused(
                    f"cannot read symlink {new}: {exc.strerror}", raw=self.raw
                ) from None
            resolved = self.walk(path, target, confined=False)
            self._proc_check(resolved, f"symlink {new}")
            if not self.inside(resolved):
                raise PathRefused(
                    f"{self.raw!r} goes through symlink {new} which points outside the workspace ({resolved})",
                    raw=self.raw,
                )
            path = resolved
        return path


def resolve_in_workspace(
    raw: str | os.PathLike, roots: Sequence[Path], *, base: Path | None = None
) -> Path:
    """Resolve a tool path argument to an absolute path inside one workspace folder, or refuse."""
    if not isinstance(raw, (str, os.PathLike)):
        raise PathRefused(f"path must be a string, got {type(raw).__name__}")
    raw = os.fspath(raw)
    _check_text(raw)
    real_roots = _real_roots(roots)
    walker = _Walker(real_roots, raw)
    if os.path.isabs(raw):
        start, rest = _anchor(raw, roots, real_roots)
    else:
        start = os.path.realpath(os.fspath(base if base is not None else roots[0]))
        if not walker.inside(start):
            raise PathRefused(f"base folder {base} is outside the workspace")
        rest = raw
    resolved = walker.walk(start, rest, confined=True)
    if not walker.inside(resolved):  # defensive: walk() keeps every step inside
        raise PathRefused(f"{raw!r} is outside the workspace", raw=raw)
    return Path(resolved)


def _anchor(raw: str, roots: Sequence[Path], real_roots: list[str]) -> tuple[str, str]:
    """Split an absolute path into (real root, remainder) by the longest matching root."""
    # collapse '//' and '/./' only; '..' is left for the walker to judge
    parts = [p for p in raw.split("/") if p not in ("", ".")]
    clean = "/" + "/".join(parts)
    best: tuple[int, str, str] | None = None
    for given, real in zip(roots, real_roots, strict=True):
        for form in {os.path.normpath(os.fspath(given)), real}:
            if _under(clean, form):
                rest = clean[len(form) :].lstrip("/")
                if best is None or len(form) > best[0]:
                    best = (len(form), real, rest)
    if best is None:
        raise PathRefused(f"absolute path {raw!r} is outside every workspace folder", raw=raw)
    return best[1], best[2]


def relative_to_workspace(path: Path | str, roots: Sequence[Path]) -> str:
    """Posix path relative to the innermost workspace folder holding it ('.' for a root)."""
    p = os.fspath(path)
    candidates = {os.path.normpath(p), os.path.realpath(p)} if os.path.isabs(p) else {p}
    best: tuple[int, str] | None = None
    for r in roots:
        for form in {os.path.normpath(os.fspath(r)), os.path.realpath(os.fspath(r))}:
            for c in candidates:
                if _under(c, form) and (best is None or len(form) > best[0]):
                    best = (len(form), os.path.relpath(c, form))
    if best is None:
        raise PathRefused(f"{p} is outside every workspace folder")
    return PurePosixPath(*Path(best[1]).parts).as_posix()


def workspace_name(path: Path | str, roots: Sequence[Path]) -> str:
    """How a path is shown and recorded: posix, relative to the innermost workspace folder
    holding it; a relative path as given; a path outside every folder stays absolute."""
    p = os.fspath(path)
    if not os.path.isabs(p):
        return PurePosixPath(p.replace("\\", "/")).as_posix()
    try:
        return relative_to_workspace(p, roots)
    except PathRefused:
        return Path(p).as_posix()


@lru_cache(maxsize=32)
def _spec(globs: tuple[str, ...]) -> pathspec.PathSpec:
    import pathspec  # here, not at the top: ~10 ms that `ndomo run` need not pay before its request

    return pathspec.GitIgnoreSpec.from_lines([g for g in globs if g.strip()])


def default_secret_globs() -> list[str]:
    from ndomo.config import Settings

    return list(Settings().secret_globs)


def is_secret(path: Path | str, roots: Sequence[Path], globs: Iterable[str] | None = None) -> bool:
    """True when the path matches a secret glob (gitignore semantics), judged workspace-relative."""
    spec = _spec(tuple(default_secret_globs() if globs is None else globs))
    try:
        rel = relative_to_workspace(path, roots)
    except PathRefused:
        rel = os.fspath(path).lstrip("/")
    if rel in ("", "."):
        return False
    return spec.match_file(rel)
