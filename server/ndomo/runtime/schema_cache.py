"""Tool parameter schemas kept between processes, in the user's cache folder.

Building the JSON schema of ~30 tool parameter models (`model_json_schema()`, then
`compact_schema`) was ~60-80 ms of every `ndomo run` and of a server's first turn, before
its model request could leave, for an answer that changes only when the code does. The file
is keyed by a stamp of the code that builds the schemas: ndomo's version and every source
file's size and modification time, pydantic's and Python's versions; a model defined outside
ndomo (an installed feature's tool) is also keyed by its own module file. A stale, missing or
unreadable file is rebuilt; a schema read from it only tells the model how to call — the
call is still validated by the pydantic model itself.

The same file keeps the manifest of each of ndomo's tool loaders (`ToolRegistry.later`):
what their tools are, so a process offers them without importing their modules (~40 ms of
`ndomo run`'s start-up). A manifest only offers: the registry loads the tool itself before
any check sees a call.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

log = logging.getLogger("ndomo.runtime")

STALE_S = 86_400.0
_loaded: dict[str, Any] | None = None
_dirty = False


def cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """`$XDG_CACHE_HOME/ndomo` (default `~/.cache/ndomo`): rebuildable, never in a workspace."""
    env = os.environ if env is None else env
    base = env.get("XDG_CACHE_HOME") or ""
    root = Path(base) if os.path.isabs(base) else Path.home() / ".cache"
    return root / "ndomo"


@functools.cache
def _stamp() -> str:
    import pydantic

    import ndomo

    digest = hashlib.sha256()
    digest.update(f"{ndomo.__version__} {pydantic.VERSION} {sys.version}".encode())
    for folder in ndomo.__path__:
        for top, dirs, files in os.walk(folder):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                if name.endswith(".py"):
                    st = os.stat(os.path.join(top, name))
                    digest.update(f"{top}/{name} {st.st_size} {st.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:24]


def _path() -> Path:
    return cache_dir() / f"tool-schemas-{_stamp()}.json"


def _entries() -> dict[str, Any]:
    global _loaded
    if _loaded is None:
        try:
            data = json.loads(_path().read_text(encoding="utf-8"))
            _loaded = data if isinstance(data, dict) else {}
        except (OSError, ValueError):
            _loaded = {}
    return _loaded


def _key(model: type) -> str:
    key = f"{model.__module__}:{model.__qualname__}"
    if model.__module__.split(".")[0] == "ndomo":
        return key  # the stamp covers ndomo's own sources
    file = getattr(sys.modules.get(model.__module__), "__file__", None)
    try:
        st = os.stat(file) if file else None
    except OSError:
        st = None
    return f"{key}:{file}:{st.st_size}:{st.st_mtime_ns}" if st else ""


def code_key(fn: Callable[..., Any]) -> str:
    """The key of what `fn` (a feature's tool loader) gives, when the stamp covers its code:
    ndomo's own functions only ("" for others, whose result is not kept)."""
    module = getattr(fn, "__module__", None) or ""
    if module.split(".")[0] != "ndomo":
        return ""
    return f"loader:{module}:{getattr(fn, '__qualname__', '')}"


def entry(key: str) -> Any:
    """What was kept under `key` for this code (None: nothing)."""
    return _entries().get(key)


def keep(key: str, value: Any) -> None:
    """Keep `value` under `key`; written with the next `save()`."""
    global _dirty
    entries = _entries()
    if entries.get(key) != value:
        entries[key] = value
        _dirty = True


def schema(model: type, build: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """`build()`'s schema for `model`, from the cache when it holds it."""
    global _dirty
    key = _key(model)
    if not key:
        return build()
    entries = _entries()
    found = entries.get(key)
    if isinstance(found, dict):
        return found
    entries[key] = made = build()
    _dirty = True
    return made


def save() -> None:
    """Write what was built since the last save (atomically: a reader sees all or nothing)."""
    global _dirty
    if not _dirty or _loaded is None:
        return
    _dirty = False
    path = _path()
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tool-schemas-")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(_loaded, out)
        os.replace(tmp, path)
        tmp = None
        # Another stamp's file unused for a day: its code is gone (two installs in use keep theirs).
        for old in path.parent.glob("tool-schemas-*.json"):
            if old != path and time.time() - old.stat().st_mtime > STALE_S:
                old.unlink(missing_ok=True)
    except OSError:
        log.debug("could not save the tool schemas to %s", path, exc_info=True)
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
