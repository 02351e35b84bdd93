"""Where a workspace's reflexes are, and their files' stamp: what every turn checks (the
catalog's refresh), read without the parser and the models, which load with a first file."""

from __future__ import annotations

from pathlib import Path


def reflex_dir(root: Path) -> Path:
    return root / ".ndomo" / "reflexes"


def reflex_files(root: Path) -> list[Path]:
    d = reflex_dir(root)
    if not d.is_dir():
        return []
    return sorted(p for p in d.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file())


def signature(root: Path) -> tuple:
    """Changes whenever a reflex file is added, removed or edited."""
    out = []
    for p in reflex_files(root):
        try:
            st = p.stat()
        except OSError:
            continue
        out.append((p.name, st.st_mtime_ns, st.st_size))
    return tuple(out)
