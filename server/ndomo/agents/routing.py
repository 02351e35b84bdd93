"""Which sub-agent builds a task: by file extension, `metadata.stack` overriding.

`make_router(role)` is what the plan store's `create_tasks(..., router=...)` calls on
each task: split multi-stack tasks, then fill in the agent of tasks that have none.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import PurePosixPath
from typing import Any

from ndomo.filetypes import STACKS

GENERIC_SMITH = "smith"
PAINTER = "painter"

# stack -> smith
STACK_AGENTS: dict[str, str] = {
    "go": "go-smith",
    "vue": "vue-smith",
    "js": "js-smith",
    "python": "python-smith",
    "rust": "rust-smith",
    "zig": "zig-smith",
}

# file extension (lower case) -> stack (the one table: ndomo/filetypes.py)
EXTENSION_STACKS: dict[str, str] = STACKS

# metadata.stack spellings -> stack
STACK_ALIASES: dict[str, str] = {
    "go": "go",
    "golang": "go",
    "vue": "vue",
    "svelte": "vue",
    "sveltekit": "vue",
    "nuxt": "vue",
    "js": "js",
    "javascript": "js",
    "ts": "js",
    "typescript": "js",
    "node": "js",
    "nodejs": "js",
    "react": "js",
    "jsx": "js",
    "tsx": "js",
    "deno": "js",
    "bun": "js",
    "python": "python",
    "py": "python",
    "python3": "python",
    "rust": "rust",
    "rs": "rust",
    "zig": "zig",
    "generic": "generic",
    "other": "generic",
    "shell": "generic",
    "docs": "generic",
}

# Agents the router itself chooses; an explicit agent outside this set is kept as given.
ROUTED_AGENTS = frozenset({*STACK_AGENTS.values(), GENERIC_SMITH})


def _field(task: Any, name: str, default: Any = None) -> Any:
    if isinstance(task, Mapping):
        return task.get(name, default)
    return getattr(task, name, default)


def _with(task: Any, **update: Any) -> Any:
    if hasattr(task, "model_copy"):
        return task.model_copy(update=update)
    return {**task, **update}


def file_stack(path: str) -> str | None:
    return EXTENSION_STACKS.get(PurePosixPath(str(path).replace("\\", "/")).suffix.lower())


def metadata_stack(metadata: Mapping[str, Any] | None) -> str | None:
    """The stack named by `metadata.stack`, or None when absent or unknown."""
    if not isinstance(metadata, Mapping):
        return None
    stack = metadata.get("stack")
    if not isinstance(stack, str):
        return None
    return STACK_ALIASES.get(stack.strip().lower())


def files_by_stack(files: list[str] | None) -> dict[str, list[str]]:
    """Files grouped by stack, in order of first appearance. Files of no known stack join
    the first group (or form a 'generic' group when nothing else matched)."""
    groups: dict[str, list[str]] = {}
    unknown: list[str] = []
    for path in files or []:
        stack = file_stack(path)
        if stack is None:
            unknown.append(path)
        else:
            groups.setdefault(stack, []).append(path)
    if unknown:
        if groups:
            first = next(iter(groups))
            groups[first] = groups[first] + unknown
        else:
            groups["generic"] = unknown
    return groups


def _stack_agent(stack: str | None) -> str:
    return STACK_AGENTS.get(stack or "", GENERIC_SMITH)


def route_agent(
    files: list[str] | None, metadata: Mapping[str, Any] | None = None, *, role: str | None = None
) -> str:
    """The sub-agent for a task. `metadata.stack` wins over extensions; painter only when
    a builder (the calling agent's role, see AgentFrontmatter.role) routes a `stack: vue`,
    `type: design` task. Files of several stacks go to
    the stack with the most files (the first seen on a tie) — split such tasks first."""
    stack = metadata_stack(metadata)
    if role == "builder" and stack == "vue" and isinstance(metadata, Mapping):
        kind = metadata.get("type")
        if isinstance(kind, str) and kind.strip().lower() == "design":
            return PAINTER
    if stack is not None:
        return _stack_agent(stack)
    counts: dict[str, int] = {}
    for path in files or []:
        found = file_stack(path)
        if found is not None:
            counts[found] = counts.get(found, 0) + 1
    if not counts:
        return GENERIC_SMITH
    return _stack_agent(max(counts, key=lambda s: counts[s]))  # max keeps the first on ties


def split_by_stack(task: Any, *, role: str | None = None) -> list[Any]:
    """One task per stack when the files span several (description suffixed with the
    stack, `metadata.stack` set); a single-stack task, or one whose `metadata.stack` names a
    stack, comes back unchanged. Agents the router picked are re-routed per part; any other
    explicit agent (e.g. craftsman) is kept on every part."""
    metadata = _field(task, "metadata") or {}
    if metadata_stack(metadata) is not None:
        return [task]
    groups = files_by_stack(list(_field(task, "files") or []))
    if len(groups) < 2:
        return [task]
    description = _field(task, "description") or ""
    agent = _field(task, "agent")
    parts = []
    for stack, files in groups.items():
        part_meta = {**dict(metadata), "stack": stack}
        part_agent = agent
        if agent in ROUTED_AGENTS:
            part_agent = route_agent(files, part_meta, role=role)
        parts.append(
            _with(
                task,
                description=f"{description} ({stack})",
                files=files,
                metadata=part_meta,
                agent=part_agent,
            )
        )
    return parts


def make_router(role: str | None) -> Callable[[Any], list[Any]]:
    """Router for `create_tasks(..., router=...)`: split by stack, then route agentless tasks."""

    def router(task: Any) -> list[Any]:
        out = []
        for part in split_by_stack(task, role=role):
            if not _field(part, "agent"):
                part = _with(
                    part,
                    agent=route_agent(_field(part, "files"), _field(part, "metadata"), role=role),
                )
            out.append(part)
        return out

    return router
