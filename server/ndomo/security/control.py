"""The project's control files: what configures ndomo, git and the agents themselves.

An agent that could rewrite these could widen its own permissions (`.ndomo/agents/*.md`,
`.ndomo/config.yaml`), plant code git runs (`.git/config`, `.git/hooks/`), forge saved
approvals (`.ndomo/ndomo.db`) or rewrite the instructions every later turn obeys
(`AGENTS.md`). Paths here are workspace-relative posix strings of the resolved real path.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import pathspec

from ndomo.security.paths import PathRefused, relative_to_workspace, resolve_in_workspace

ControlKind = Literal["plan_view", "instructions", "agent_config", "denied"]

INSTRUCTION_FILES = frozenset({"AGENTS.md", "CLAUDE.md", ".ndomo/instructions.md"})
_PLAN_VIEWS = ".ndomo/plans"

# Control files at any depth (a nested project is opened, run or git-ed on its own):
# folders protected whole, single files, and the `ndomo` a venv would put on PATH.
CONTROL_DIRS = (".ndomo", ".vscode", ".idea")
CONTROL_FILES = (".envrc", ".mcp.json")
CONTROL_ENTRY_POINTS = (".venv/bin/ndomo", "venv/bin/ndomo")
GIT_CONTROL = ("config", "hooks", "commondir")  # inside any `.git` folder


def _under(rel: str, folder: str) -> bool:
    return rel == folder or rel.startswith(folder + "/")


def instruction_file(rel: str) -> bool:
    """A project instruction file the agents read into their system prompt."""
    return rel in INSTRUCTION_FILES


def _in_git(rel: str) -> bool:
    """Inside a `.git` folder at any depth (a nested repository's too)."""
    return ".git" in rel.split("/")


def shell_read_only(rel: str) -> bool:
    """Where a shell command may never write: the sandbox mounts these read-only too.

    `.git/config`, `.git/hooks/` and `.git/commondir` of the repository and of any nested
    one (a `sub/.git` made by the agent would run its hooks and config under `git -C sub`),
    the `.git` folder or pointer itself, and every other control file at any depth
    (`.ndomo/`, `.vscode/`, `.idea/`, `.envrc`, `.mcp.json`, a venv's `bin/ndomo`). The
    rest of `.git/` stays writable so `git add` and `git commit` work.
    """
    parts = rel.split("/")
    for i, part in enumerate(parts):
        if part == ".git":
            rest = parts[i + 1 :]
            if not rest or rest[0] in GIT_CONTROL:
                return True
    return _nested_control(parts)


def _nested_control(parts: list[str]) -> bool:
    """Under a control folder, a control file or a venv's `bin/ndomo`, at any depth."""
    if any(p in CONTROL_DIRS for p in parts) or parts[-1] in CONTROL_FILES:
        return True
    return any(
        parts[i : i + 3] == ep.split("/")
        for ep in CONTROL_ENTRY_POINTS
        for i in range(len(parts) - 2)
    )


def control_kind(rel: str) -> ControlKind | None:
    """How an agent's file tools treat a write to `rel` (None: not a control file).

    instructions / agent_config: always ask the user, in every mode, with a warning;
    plan_view: refused, plans change through the plan tools; denied: refused.
    A nested project's control files count as the root's do (`pkg/.ndomo/config.yaml` is
    obeyed by `ndomo run` in `pkg/`); editor settings, `.envrc`, `.mcp.json` and a venv's
    `bin/ndomo` configure what launches or feeds ndomo, so they are asked about too.
    """
    if instruction_file(rel):
        return "instructions"
    if _under(rel, _PLAN_VIEWS):
        return "plan_view"
    parts = rel.split("/")
    if ".ndomo" in parts:
        tail = parts[parts.index(".ndomo") + 1 :]
        if tail == ["config.yaml"] or (len(tail) == 2 and tail[0] == "agents"):
            return "agent_config"
        return "denied"
    if _in_git(rel):
        return "denied"
    if _nested_control(parts):
        return "agent_config"
    return None


def never_design(rel: str) -> bool:
    """`.ndomo/**` and `.git/**` are never design artifacts, whatever the config says."""
    return _under(rel, ".ndomo") or _in_git(rel)


def warning(rel: str) -> str:
    """What approving a write to this control file would grant, for the approval prompt."""
    kind = control_kind(rel)
    if kind == "instructions":
        return (
            f"WARNING: {rel} is a project instruction file: every later turn of every agent obeys what it says. "
            "Approve only if you have read the change."
        )
    if rel == ".ndomo/config.yaml":
        return (
            "WARNING: .ndomo/config.yaml decides which model server gets your code and which environment "
            "variable is sent as its API key, which files count as secrets and as design artifacts. "
            "A change here can leak secrets or widen what discussion mode may write."
        )
    parts = rel.split("/")
    if kind == "agent_config" and ".ndomo" not in parts:
        return (
            f"WARNING: {rel} configures what starts or feeds ndomo and your tools (editor settings such as "
            "`ndomo.server.command`, direnv, MCP servers, a venv's `ndomo` on PATH): a change here can run "
            "code outside the sandbox, with your rights. Approve only if you have read the change."
        )
    if kind == "agent_config" and parts[-1] == "config.yaml":
        return (
            f"WARNING: {rel} configures ndomo for the project in {'/'.join(parts[:-2]) or '.'}: which model "
            "server gets your code, which variable is sent as its API key, what counts as a secret. "
            "A change here can leak secrets or widen what the agents may do."
        )
    if kind == "agent_config":
        return (
            f"WARNING: {rel} defines an agent and its permissions (shell rules, edits, delegation). "
            "A change here can let that agent run commands or edit files without asking, "
            "in this and every later session."
        )
    return f"{rel} is a control file"


def design_artifact(rel: str, globs: list[str]) -> bool:
    """Does a FILE at workspace-relative `rel` match the design globs (gitignore syntax)?

    Unlike plain gitignore matching, a pattern naming files (`**/*.md`) does not match
    what lies inside a folder that happens to be called `notes.md`; only a pattern that
    names a folder (`docs/`, `docs/**`) covers the files inside it. `.ndomo/` and
    `.git/` never count.
    """
    if never_design(rel):
        return False
    verdict = False
    for pattern in _design_spec(tuple(globs)).patterns:
        if pattern.include is None or pattern.regex is None:
            continue
        m = pattern.regex.match(rel)
        if m is None:
            continue
        through_folder = m.groupdict().get("ps_d") is not None
        if through_folder and not _folder_pattern(str(pattern.pattern)):
            continue
        verdict = bool(pattern.include)
    return verdict


def _folder_pattern(text: str) -> bool:
    t = text.lstrip("!").rstrip()
    return t.endswith("/") or t.endswith("/**")


@lru_cache(maxsize=32)
def _design_spec(globs: tuple[str, ...]) -> pathspec.GitIgnoreSpec:
    import pathspec  # on the first check, not at every process's start (~10 ms)

    return pathspec.GitIgnoreSpec.from_lines([g for g in globs if g.strip()])


def real_target(raw: str, roots: Sequence[Path]) -> tuple[str, bool] | None:
    """(workspace-relative real path, is a folder) of a file-tool path argument, resolved
    exactly as the file tools resolve it before writing; None when they would refuse it."""
    try:
        path = resolve_in_workspace(raw, roots)
        return relative_to_workspace(path, roots), os.path.isdir(path)
    except PathRefused:
        return None
