"""The one source of mode and agent names: what editors and the CLI offer as choices.

Modes come from the registry `setup(plugins)` fills (built-in folders and `ndomo.features`
entry points), agents from the agent loader (built-in files and the workspace's
`.ndomo/agents/*.md`); the defaults from the settings. The LSP server advertises the same
lists in its `initialize` result (`capabilities.experimental.ndomo`), and `ndomo.catalog` /
`ndomo catalog --json` return them fresh. Editors build every mode and agent menu from
them, so adding a mode or an agent touches only its own folder or file.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from pydantic import BaseModel

from ndomo.actions import NoParams, action
from ndomo.agents.loader import AgentSet, load_agents_async
from ndomo.schema import Schema

if TYPE_CHECKING:
    from ndomo.app import App
    from ndomo.config import Settings
    from ndomo.modes.base import AgentMode


class ModeEntry(Schema):
    name: str
    description: str
    default: bool
    # what the mode is for ("plan", "research", "build"), so an editor can pick one by purpose
    role: str | None = None
    requires_tools: bool = False


class AgentEntry(Schema):
    name: str
    description: str
    default: bool
    # a user can talk to it directly (agent-file `mode: primary` or `all`): menus list these
    primary: bool
    default_mode: str | None = None
    role: str | None = None  # "planner", "builder" or None (see AgentFrontmatter.role)


class Catalog(Schema):
    modes: list[ModeEntry]
    agents: list[AgentEntry]
    # settings that name a mode or agent nobody registered (the defaults then fall back)
    problems: list[str] = []


def build_catalog(modes: Mapping[str, AgentMode], agents: AgentSet, settings: Settings) -> Catalog:
    default_mode = settings.modes.default
    default_agent = settings.default_agent
    problems = []
    if modes and default_mode not in modes:
        problems.append(f"modes.default {default_mode!r} is not a mode; modes: {', '.join(modes)}")
        default_mode = next(iter(modes))
    if default_agent not in agents.agents:
        problems.append(
            f"default_agent {default_agent!r} is not an agent; agents: {', '.join(agents.names())}"
        )
    return Catalog(
        modes=[
            ModeEntry(
                name=m.name,
                description=m.contract.summary,
                default=m.name == default_mode,
                role=m.contract.role,
                requires_tools=m.contract.requires_tools,
            )
            for m in modes.values()
        ],
        agents=[
            AgentEntry(
                name=a.name,
                description=a.description,
                default=a.name == default_agent,
                primary=a.is_primary,
                default_mode=a.default_mode,
                role=a.role,
            )
            for a in (agents.agents[n] for n in agents.names())
        ],
        problems=problems,
    )


def pick(cat: Catalog, *, agent_role: str, mode_role: str) -> tuple[str, str] | None:
    """(agent, mode) for a job described by purpose, not by name: the default agent if it has
    `agent_role`, else the first primary agent that has it; the first mode with `mode_role`,
    else that agent's own default mode. None when no agent has the role."""
    agents = [a for a in cat.agents if a.primary and a.role == agent_role]
    if not agents:
        return None
    agent = next((a for a in agents if a.default), agents[0])
    mode = next((m.name for m in cat.modes if m.role == mode_role), agent.default_mode)
    if mode is None:
        return None
    return agent.name, mode


def render_catalog(result: object) -> str:
    data = result.model_dump() if isinstance(result, BaseModel) else result
    assert isinstance(data, dict)
    lines = ["modes:"]
    for m in data["modes"]:
        mark = " (default)" if m["default"] else ""
        lines.append(f"  {m['name']:<14} {m['description']}{mark}")
    lines.append("agents:")
    for a in data["agents"]:
        mark = " (default)" if a["default"] else ("" if a["primary"] else " (sub-agent)")
        lines.append(f"  {a['name']:<14} {a['description'][:70]}{mark}")
    lines.extend(f"problem: {p}" for p in data["problems"])
    return "\n".join(lines)


@action(
    "catalog",
    NoParams,
    summary="The modes and agents there are, with descriptions and defaults",
    render=render_catalog,
    read_only=True,
)
async def catalog(app: App, params: NoParams) -> Catalog:
    """Agents read fresh from disk, so a new `.ndomo/agents/*.md` shows up without a restart;
    an untrusted folder's own agents are not offered (the built-ins only)."""
    from ndomo.runtime.runtime import Runtime  # lazy: the runtime imports every feature

    modes = Runtime.of(app).plugins.modes
    return build_catalog(modes, await load_agents_async(app.trusted_root, modes), app.settings)
