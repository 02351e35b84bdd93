"""Reading `.ndomo/reflexes/*.yaml`: a bad file is skipped and reported, never fatal."""

from __future__ import annotations

import os
from pathlib import Path

import yaml
from pydantic import ValidationError

from ndomo.lib import yamlio
from ndomo.tools.reflexes.files import reflex_files
from ndomo.tools.reflexes.model import Reflex, ReflexProblem
from ndomo.validation import problems

MAX_FILE_BYTES = 256 * 1024


def _describe(exc: ValidationError) -> str:
    return "; ".join(
        f"{loc}: {msg}" if loc else msg
        for loc, msg in problems(exc, unknown="unknown key", whole="")
    )


def load_file(path: Path, root: Path) -> Reflex | ReflexProblem:
    rel = os.path.relpath(path, root).replace(os.sep, "/")
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return ReflexProblem(
                path=rel, message=f"larger than {MAX_FILE_BYTES // 1024} KB; skipped"
            )
        data = yamlio.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        return ReflexProblem(path=rel, message=f"cannot read: {exc}")
    except yaml.YAMLError as exc:
        return ReflexProblem(path=rel, message=f"not valid YAML: {str(exc).splitlines()[0]}")
    if not isinstance(data, dict):
        return ReflexProblem(
            path=rel, message="a reflex file holds one mapping (name, description, params, steps)"
        )
    data.setdefault("name", path.stem)
    data["source"] = rel
    try:
        return Reflex.model_validate(data)
    except ValidationError as exc:
        return ReflexProblem(path=rel, message=_describe(exc))


def load_reflexes(root: Path) -> tuple[list[Reflex], list[ReflexProblem]]:
    """Every valid reflex of the workspace, and what was wrong with the others (blocking I/O)."""
    reflexes: list[Reflex] = []
    problems: list[ReflexProblem] = []
    seen: dict[str, str] = {}
    for path in reflex_files(root):
        got = load_file(path, root)
        if isinstance(got, ReflexProblem):
            problems.append(got)
        elif got.name in seen:
            problems.append(
                ReflexProblem(
                    path=got.source or path.name,
                    message=f"reflex '{got.name}' is already defined in {seen[got.name]}",
                )
            )
        else:
            seen[got.name] = got.source or path.name
            reflexes.append(got)
    return reflexes, problems
