"""Bird's-eye map of a workspace: folders, files and how many symbols each holds."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from ndomo.lib.code.outline import outline
from ndomo.lib.code.source import is_outlinable, read_source
from ndomo.lib.search.walk import walk
from ndomo.schema import Schema

MAX_OUTLINED_FILES = 2000  # beyond this, files are listed without symbol counts


class FileEntry(Schema):
    name: str
    symbols: int | None = None  # None: not code, binary, too big or past the cap


class FolderEntry(Schema):
    path: str  # relative to the workspace root; "" is the root
    files: list[FileEntry] = []


class CollapsedFolder(Schema):
    """A folder deeper than ``depth``: only totals."""

    path: str
    files: int
    symbols: int


class FileMap(Schema):
    root: str  # the mapped folder, relative to the workspace root ("" = root)
    depth: int
    folders: list[FolderEntry]
    collapsed: list[CollapsedFolder] = []

    def render(self, max_chars: int = 6000) -> str:
        """Indented tree, cut at ``max_chars`` with a note of what was left out."""
        out: list[str] = []
        used = 0
        items: list[tuple[str, str]] = []
        for folder in self.folders:
            items.append((folder.path, "folder"))
        for c in self.collapsed:
            items.append((c.path, "collapsed"))
        items.sort(key=lambda it: it[0].split("/") if it[0] else [])
        folders = {f.path: f for f in self.folders}
        collapsed = {c.path: c for c in self.collapsed}
        base_depth = len(self.root.split("/")) if self.root else 0
        left_out = 0
        for path, what in items:
            level = (len(path.split("/")) if path else 0) - base_depth
            pad = "  " * level
            label = (path.rsplit("/", 1)[-1] if path else (self.root or ".")) + "/"
            if what == "collapsed":
                c = collapsed[path]
                block = [f"{pad}{label} … {c.files} files, {c.symbols} symbols"]
            else:
                f = folders[path]
                block = [f"{pad}{label}"]
                for entry in f.files:
                    count = "" if entry.symbols is None else f" ({entry.symbols})"
                    block.append(f"{pad}  {entry.name}{count}")
            size = sum(len(b) + 1 for b in block)
            if used + size > max_chars:
                left_out += 1
                continue
            out.extend(block)
            used += size
        if left_out:
            out.append(f"… {left_out} folders left out; map a sub-folder with path")
        return "\n".join(out) if out else "(no files)"


def file_map(root: Path | str, path: str | None = None, depth: int = 3) -> FileMap:
    """Folders up to ``depth`` levels below ``path`` (1 = only that folder) list their
    files with symbol counts; deeper folders are collapsed into totals."""
    if depth < 1:
        raise ValueError("depth must be at least 1")
    root = Path(root).resolve()
    start = (path or "").strip("/")
    if start in (".", "./"):
        start = ""
    if start and not (root / start).is_dir():
        raise ValueError(f"path {path!r} is not a folder in the workspace")
    base = len(start.split("/")) if start else 0
    folders: dict[str, FolderEntry] = {}
    collapsed: dict[str, CollapsedFolder] = {}
    outlined = 0
    for rel, abs_path in walk(root, under=start or None):
        count = None
        if is_outlinable(rel) and outlined < MAX_OUTLINED_FILES:
            text = read_source(abs_path)
            if text is not None:
                outlined += 1
                count = len(outline(rel, text).symbols)
        parent = str(PurePosixPath(rel).parent)
        parent = "" if parent == "." else parent
        parts = parent.split("/") if parent else []
        if len(parts) - base < depth:
            folders.setdefault(parent, FolderEntry(path=parent)).files.append(
                FileEntry(name=PurePosixPath(rel).name, symbols=count)
            )
        else:
            key = "/".join(parts[: base + depth])
            c = collapsed.setdefault(key, CollapsedFolder(path=key, files=0, symbols=0))
            c.files += 1
            c.symbols += count or 0
    # Folders holding only sub-folders still need a line to hang their children on.
    for key in list(folders) + list(collapsed):
        parts = key.split("/") if key else []
        for i in range(base, len(parts)):
            anc = "/".join(parts[:i])
            folders.setdefault(anc, FolderEntry(path=anc))
    return FileMap(
        root=start,
        depth=depth,
        folders=sorted(folders.values(), key=lambda f: f.path),
        collapsed=sorted(collapsed.values(), key=lambda c: c.path),
    )
