"""Load agent definitions: the shipped ones, then the project's `.ndomo/agents/*.md`.

A broken file never stops the others: it is skipped and reported with its path and the
0-based line of the offending key, ready to become an editor diagnostic.
"""

from __future__ import annotations

import asyncio
import importlib.resources
from collections.abc import Collection
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import Field, ValidationError

from ndomo.lib import yamlio
from ndomo.schema import Schema

from .schema import AGENT_NAME_RE, AgentDef, AgentFrontmatter

PROJECT_AGENTS_DIR = Path(".ndomo") / "agents"
_FENCE = "---"


class AgentProblem(Schema):
    path: str
    line: int = 0  # 0-based
    message: str
    severity: Literal["error", "warning"] = "error"

    def describe(self) -> str:
        return f"{self.path}:{self.line + 1}: {self.message}"


class AgentSet(Schema):
    agents: dict[str, AgentDef] = Field(default_factory=dict)
    problems: list[AgentProblem] = Field(default_factory=list)

    def get(self, name: str) -> AgentDef | None:
        return self.agents.get(name)

    def names(self) -> list[str]:
        return sorted(self.agents)

    def primaries(self) -> list[AgentDef]:
        """Agents a user can talk to directly (mode primary or all), by name."""
        return [self.agents[n] for n in self.names() if self.agents[n].is_primary]

    def subagents(self) -> list[AgentDef]:
        return [self.agents[n] for n in self.names() if self.agents[n].is_subagent]


def builtin_agents_dir() -> Path:
    """`ndomo/_agents` inside an installed wheel, else the checkout's top-level `agents/`."""
    try:
        shipped = importlib.resources.files("ndomo") / "_agents"
        if shipped.is_dir():
            return Path(str(shipped))
    except (ModuleNotFoundError, TypeError, OSError):
        pass
    return Path(__file__).resolve().parents[3] / "agents"


def project_agents_dir(workspace: Path) -> Path:
    return Path(workspace) / PROJECT_AGENTS_DIR


# --- parsing -------------------------------------------------------------------------------


def _split_frontmatter(text: str) -> tuple[list[str], int, str] | str:
    """(yaml lines, index of the closing fence, body) or an error message."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != _FENCE:
        return "missing YAML frontmatter: the file must start with a '---' line"
    for index in range(1, len(lines)):
        if lines[index].rstrip() == _FENCE:
            return lines[1:index], index, "".join(lines[index + 1 :])
    return "frontmatter is not closed: add a '---' line after the YAML block"


def _key_line(node: yaml.Node | None, keys: tuple[Any, ...]) -> int | None:
    """0-based line (within the YAML) of the deepest key along `keys` that exists."""
    line = None
    for key in keys:
        if isinstance(node, yaml.MappingNode):
            for knode, vnode in node.value:
                if knode.value == str(key):
                    line, node = knode.start_mark.line, vnode
                    break
            else:
                return line
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            node = node.value[key]
            line = node.start_mark.line
        else:
            return line
    return line


def _data_path(data: Any, loc: tuple[Any, ...]) -> tuple[Any, ...]:
    """Keep the parts of a pydantic error location that are real keys of the data
    (drops union-branch tags such as `literal['allow','ask','deny']`)."""
    kept: list[Any] = []
    for part in loc:
        if (
            isinstance(data, dict)
            and part in data
            or isinstance(data, list)
            and isinstance(part, int)
            and part < len(data)
        ):
            kept.append(part)
            data = data[part]
    return tuple(kept)


def _duplicate_keys(node: yaml.Node | None, out: list[tuple[str, int]]) -> None:
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for knode, vnode in node.value:
            if knode.value in seen:
                out.append((str(knode.value), knode.start_mark.line))
            seen.add(knode.value)
            _duplicate_keys(vnode, out)
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            _duplicate_keys(item, out)


def _validation_problems(
    exc: ValidationError, data: dict, node: yaml.Node | None, source: str, offset: int
) -> list[AgentProblem]:
    errors = [e for e in exc.errors() if e["type"] != "is_instance_of"] or exc.errors()
    found: dict[tuple[Any, ...], tuple[str, int]] = {}
    for err in errors:
        loc = tuple(err["loc"])
        if err["type"] == "extra_forbidden":
            path = _data_path(data, loc)
            message = f"unknown key '{loc[-1]}'"
        elif err["type"] == "missing":
            path = _data_path(data, loc[:-1])
            message = f"missing required key '{loc[-1]}'"
        else:
            path = _data_path(data, loc)
            message = err["msg"].removeprefix("Value error, ")
            if err["type"] == "literal_error":
                message += f", got {err['input']!r}"
                if isinstance(err["input"], bool):
                    message += " (YAML reads yes/no/on/off as true/false)"
        where = ".".join(str(p) for p in path)
        if err["type"] != "extra_forbidden" and where:
            message = f"{where}: {message}"
        line = _key_line(node, path)
        key = (err["type"] == "missing", *path)
        if key not in found:
            found[key] = (message, 0 if line is None else line + offset)
    # A deeper error explains a shallower one on the same key (union branches).
    keys = list(found)
    deepest = [k for k in keys if not any(o != k and o[: len(k)] == k for o in keys)]
    return [AgentProblem(path=source, line=found[k][1], message=found[k][0]) for k in deepest]


def parse_agent_text(
    text: str, *, name: str, source: str, modes: Collection[str] | None = None
) -> tuple[AgentDef | None, list[AgentProblem]]:
    """Parse one definition; on any error return None and the problems (never raises).

    `modes`: the registered mode names, to check `default_mode` against (None: unchecked).
    """

    def fail(message: str, line: int = 0) -> tuple[None, list[AgentProblem]]:
        return None, [AgentProblem(path=source, line=line, message=message)]

    if not AGENT_NAME_RE.match(name):
        return fail(
            f"invalid agent name {name!r} (from the file name): use letters, digits, '.', '_' or '-'"
        )
    text = text.removeprefix("\ufeff")
    split = _split_frontmatter(text)
    if isinstance(split, str):
        return fail(split)
    yaml_lines, closing, body = split
    yaml_text = "".join(yaml_lines)
    offset = 1  # the YAML starts on the line after the opening fence
    try:
        data = yamlio.safe_load(yaml_text)
        node = yamlio.compose(yaml_text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        return fail(f"invalid YAML: {problem}", (mark.line + offset) if mark else 0)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        return fail(
            "frontmatter must be a mapping of keys (description, mode, permission, ...)", offset
        )
    problems: list[AgentProblem] = []
    duplicates: list[tuple[str, int]] = []
    _duplicate_keys(node, duplicates)
    for key, line in duplicates:
        problems.append(
            AgentProblem(
                path=source,
                line=line + offset,
                severity="warning",
                message=f"duplicate key '{key}': the last one wins",
            )
        )
    try:
        front = AgentFrontmatter.model_validate(
            data, context=None if modes is None else {"modes": modes}
        )
    except ValidationError as exc:
        return None, problems + _validation_problems(exc, data, node, source, offset)
    prompt = body.strip()
    if not prompt:
        problems.append(
            AgentProblem(
                path=source,
                line=closing,
                message="empty prompt: write the agent's instructions after the closing '---'",
            )
        )
        return None, problems
    agent = AgentDef(**dict(front), name=name, prompt=prompt, source=source)
    return agent, problems


def parse_agent_file(
    path: Path, modes: Collection[str] | None = None
) -> tuple[AgentDef | None, list[AgentProblem]]:
    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, [
            AgentProblem(
                path=str(path), message=f"not UTF-8 text: {exc.reason} at byte {exc.start}"
            )
        ]
    except OSError as exc:
        return None, [AgentProblem(path=str(path), message=f"cannot read: {exc.strerror or exc}")]
    return parse_agent_text(text, name=path.stem, source=str(path), modes=modes)


def _load_dir(
    folder: Path,
    agents: dict[str, AgentDef],
    problems: list[AgentProblem],
    modes: Collection[str] | None,
) -> None:
    if not folder.is_dir():
        return
    for path in sorted(folder.glob("*.md")):
        if not path.is_file():
            continue
        agent, found = parse_agent_file(path, modes)
        problems.extend(found)
        if agent is not None:
            agents[agent.name] = agent  # same name: the later folder (project) wins


def load_agents(workspace: Path | None, modes: Collection[str] | None = None) -> AgentSet:
    """Built-in agents, then `<workspace>/.ndomo/agents/*.md` overrides/additions.

    `modes`: the registered mode names, to check each `default_mode` against.

    Blocking file I/O: from async code use `load_agents_async`.
    """
    agents: dict[str, AgentDef] = {}
    problems: list[AgentProblem] = []
    _load_dir(builtin_agents_dir(), agents, problems, modes)
    if workspace is not None:
        _load_dir(project_agents_dir(Path(workspace)), agents, problems, modes)
    return AgentSet(agents=agents, problems=problems)


async def load_agents_async(
    workspace: Path | None, modes: Collection[str] | None = None
) -> AgentSet:
    return await asyncio.to_thread(load_agents, workspace, modes)
