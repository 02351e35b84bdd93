"""`agents.list`: every loaded agent with a one-line permission summary, plus loader problems."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ndomo.actions import NoParams, action
from ndomo.schema import Schema

from .loader import AgentProblem, builtin_agents_dir, load_agents_async, project_agents_dir
from .schema import AgentDef, AgentPermission, BashPolicy, TaskPolicy

if TYPE_CHECKING:
    from ndomo.app import App


class AgentInfo(Schema):
    name: str
    description: str
    mode: str  # primary | subagent | all
    default_mode: str | None = None
    source: str  # builtin | project
    path: str
    permissions: dict[str, str]
    threshold: dict[str, int] | None = None
    writes: str = "any"  # the write contract: any | design


class AgentList(Schema):
    agents: list[AgentInfo]
    problems: list[AgentProblem]


def _bash_summary(bash: Any) -> str:
    if isinstance(bash, str):
        return bash
    if isinstance(bash, BashPolicy):
        return " ∩ ".join(_bash_summary(layer) for layer in bash.layers)
    default = bash.get("*", "ask")
    allowed = sum(1 for k, v in bash.items() if k != "*" and v == "allow")
    denied = sum(1 for k, v in bash.items() if k != "*" and v == "deny")
    return f"{default} by default; {allowed} allowed, {denied} denied patterns"


def _task_summary(task: Any) -> str:
    if isinstance(task, TaskPolicy):
        return " ∩ ".join(_task_summary(layer) for layer in task.layers)
    allowed = [k for k, v in task.items() if k != "*" and v == "allow"]
    asked = [k for k, v in task.items() if k != "*" and v == "ask"]
    parts = []
    if allowed:
        parts.append("allow " + ", ".join(allowed))
    if asked:
        parts.append("ask " + ", ".join(asked))
    parts.append(f"else {task.get('*', 'deny')}")
    return "; ".join(parts)


def permission_summary(perm: AgentPermission) -> dict[str, str]:
    return {
        "edit": perm.edit,
        "write": perm.write,
        "bash": _bash_summary(perm.bash),
        "webfetch": perm.webfetch,
        "question": perm.question,
        "task": _task_summary(perm.task),
        "plan_db": perm.plan_db,
        "network": _bash_summary(perm.network),
    }


def _source(agent: AgentDef, workspace: Path) -> str:
    path = Path(agent.source).resolve()
    project = project_agents_dir(workspace).resolve()
    if project in path.parents:
        return "project"
    return "builtin" if builtin_agents_dir().resolve() in path.parents else "other"


def describe_agents(
    agents: list[AgentDef], problems: list[AgentProblem], workspace: Path
) -> AgentList:
    return AgentList(
        agents=[
            AgentInfo(
                name=a.name,
                description=a.description,
                mode=a.mode,
                default_mode=a.default_mode,
                source=_source(a, workspace),
                path=a.source,
                permissions=permission_summary(a.permission),
                threshold=(
                    own.model_dump()
                    if (own := a.own_threshold())
                    else ({} if a.threshold else None)  # `true`: the settings' numbers
                ),
                writes=a.writes,
            )
            for a in agents
        ],
        problems=problems,
    )


def render_agents(result: Any) -> str:
    data = result.model_dump() if hasattr(result, "model_dump") else result
    lines = []
    for a in data["agents"]:
        mark = " (project)" if a["source"] == "project" else ""
        lines.append(
            f"{a['name']:<13} {a['mode']:<8} {a['default_mode'] or '-':<13} {a['description'][:70]}{mark}"
        )
    for p in data["problems"]:
        lines.append(f"problem: {p['path']}:{p['line'] + 1}: {p['message']}")
    return "\n".join(lines)


@action(
    "agents.list",
    NoParams,
    summary="List agents (role, mode, permissions) and agent-file problems",
    render=render_agents,
)
async def agents_list(app: App, params: NoParams) -> AgentList:
    """Read fresh from disk, so an edited agent file shows up without a restart."""
    from ndomo.runtime.runtime import Runtime  # lazy: the runtime imports the agent features

    # an untrusted folder's own agents are not listed: they are not loaded
    aset = await load_agents_async(app.trusted_root, Runtime.of(app).plugins.modes)
    return describe_agents([aset.agents[n] for n in aset.names()], aset.problems, app.root)
