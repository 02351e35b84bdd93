"""Ignore-aware workspace walk shared by glob, grep's fallback and the code tools.

Order is depth-first with entries sorted by name inside each folder, the order
``rg --sort path`` uses, so both grep engines truncate at the same match.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pathspec

ALWAYS_SKIP = frozenset({".git", ".ndomo", "node_modules", "__pycache__", ".venv", "venv"})
IGNORE_FILES = (".gitignore", ".ignore")  # later file wins, as in ripgrep


def _read_regular(path: Path) -> str | None:
    """A regular file's text; None for anything else. Opened without blocking: a FIFO
    named .gitignore (any sandboxed command can make one) would hold the walk forever."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return f.read().decode("utf-8", errors="replace")


def _load_spec(path: Path) -> pathspec.PathSpec | None:
    import pathspec  # on the first walk, not at every process's start (~10 ms)

    text = _read_regular(path)
    if text is None:
        return None
    lines = text.splitlines()
    try:
        return pathspec.GitIgnoreSpec.from_lines(lines)
    except ValueError:  # pathspec's pattern errors are ValueErrors
        # One malformed line must not disable the whole file.
        good = []
        for line in lines:
            try:
                pathspec.GitIgnoreSpec.from_lines([line])
                good.append(line)
            except ValueError:
                continue
        return pathspec.GitIgnoreSpec.from_lines(good)


@dataclass(frozen=True)
class IgnoreRules:
    """Stack of ignore files from the root down; the deepest decisive pattern wins."""

    layers: tuple[tuple[str, pathspec.PathSpec], ...] = field(default=())

    def with_dir(self, dir_abs: Path, dir_rel: str, *, is_root: bool = False) -> IgnoreRules:
        new = list(self.layers)
        names = ((".git/info/exclude",) if is_root else ()) + IGNORE_FILES
        for name in names:
            spec = _load_spec(dir_abs / name)
            if spec is not None and len(spec) > 0:
                new.append((dir_rel, spec))
        return self if len(new) == len(self.layers) else IgnoreRules(tuple(new))

    def ignored(self, rel: str, is_dir: bool) -> bool:
        for base, spec in reversed(self.layers):
            sub = rel if not base else rel[len(base) + 1 :]
            res = spec.check_file(sub + "/" if is_dir else sub)
            if res.include is not None:
                return bool(res.include)
        return False


def _inside(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
    except ValueError:
        return False
    return True


def resolve_under(root: Path, under: str | None) -> tuple[Path, str]:
    """Resolve a model-given relative path, refusing anything outside the root."""
    if not under or under in (".", "./"):
        return root, ""
    target = (root / under).resolve()
    if not _inside(target, root):
        raise ValueError(f"path {under!r} is outside the workspace")
    rel = target.relative_to(root).as_posix()
    return target, "" if rel == "." else rel


def walk(
    root: Path,
    *,
    include_hidden: bool = False,
    under: str | None = None,
    follow_symlinks: bool = False,
) -> Iterator[tuple[str, Path]]:
    """Yield ``(relative posix path, absolute path)`` for every non-ignored file.

    ``under`` limits the walk to a sub-folder (or one file) while still applying
    the ignore files of its ancestors; an explicitly named path is itself never
    filtered. Symlinks are skipped unless ``follow_symlinks``, and even then only
    those resolving inside the root are followed.
    """
    root = Path(root).resolve()
    if not root.is_dir():
        raise ValueError(f"workspace root {str(root)!r} is not a folder")
    start, start_rel = resolve_under(root, under)
    if start.is_file():
        yield start_rel, start
        return
    if not start.is_dir():
        raise ValueError(f"path {under!r} does not exist")
    rules = IgnoreRules().with_dir(root, "", is_root=True)
    if start_rel:
        parts = start_rel.split("/")
        for i in range(1, len(parts) + 1):
            rel = "/".join(parts[:i])
            rules = rules.with_dir(root / rel, rel)
    yield from _walk_dir(root, start, start_rel, rules, include_hidden, follow_symlinks)


def _walk_dir(
    root: Path,
    dir_abs: Path,
    dir_rel: str,
    rules: IgnoreRules,
    include_hidden: bool,
    follow: bool,
) -> Iterator[tuple[str, Path]]:
    try:
        with os.scandir(dir_abs) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        name = entry.name
        if name in ALWAYS_SKIP or (not include_hidden and name.startswith(".")):
            continue
        rel = f"{dir_rel}/{name}" if dir_rel else name
        path = Path(entry.path)
        try:
            if entry.is_symlink():
                if not follow:
                    continue
                target = path.resolve()
                if not _inside(target, root):
                    continue
                is_dir, is_file = target.is_dir(), target.is_file()
            else:
                target = path
                is_dir, is_file = entry.is_dir(), entry.is_file()
        except OSError:
            continue
        if is_dir:
            if rules.ignored(rel, True):
                continue
            if target is not path and _inside(dir_abs.resolve(), target):
                continue  # a link to an ancestor would loop forever
            sub_rules = rules.with_dir(path, rel)
            yield from _walk_dir(root, path, rel, sub_rules, include_hidden, follow)
        elif is_file and not rules.ignored(rel, False):
            yield rel, path


def iter_files(
    root: Path,
    *,
    include_hidden: bool = False,
    under: str | None = None,
    follow_symlinks: bool = False,
) -> Iterator[Path]:
    """Absolute paths of the workspace files a user would consider "the project"."""
    for _rel, path in walk(
        root, include_hidden=include_hidden, under=under, follow_symlinks=follow_symlinks
    ):
        yield path


def path_excluded(root: Path, rel: str, *, include_hidden: bool = False) -> bool:
    """Whether a root-relative folder would be skipped by a walk from the root."""
    root = Path(root).resolve()
    rules = IgnoreRules().with_dir(root, "", is_root=True)
    parts = [p for p in rel.split("/") if p]
    for i, name in enumerate(parts):
        cur = "/".join(parts[: i + 1])
        if name in ALWAYS_SKIP or (not include_hidden and name.startswith(".")):
            return True
        if rules.ignored(cur, True):
            return True
        rules = rules.with_dir(root / cur, cur)
    return False
