"""Agent definition models: the YAML frontmatter of `agents/*.md` plus the prompt body.

The frontmatter models forbid unknown keys so a typo (`permision:`) is reported instead of
silently granting the defaults.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import (
    ConfigDict,
    Field,
    InstanceOf,
    ValidationInfo,
    field_validator,
)

from ndomo.config import Threshold as Threshold  # one model: settings and frontmatter
from ndomo.schema import Schema

Action = Literal["allow", "ask", "deny"]
AgentKind = Literal["primary", "subagent", "all"]
# Any registered mode; checked against the registry when the loader is given the mode
# names (validation context "modes"), and again when a session switches to the agent.
ModeName = str

# The agent name is the file stem; keep it usable as a task-map key and a CLI argument.
AGENT_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")

# deny > ask > allow; an action nobody knows counts as deny.
STRICTNESS: dict[str, int] = {"allow": 0, "ask": 1, "deny": 2}


class BashPolicy(Schema):
    """Several bash rule sets at once (caller ∩ sub-agent); the strictest layer decides.

    Only built by `permissions.intersect`, never read from a frontmatter.
    """

    model_config = ConfigDict(frozen=True)

    layers: list[Action | dict[str, Action]]

    def decide(self, command: str, *, cwd=None, roots=None, secret_globs=None):
        """The `ShellDecision` of the strictest layer (the first one on a tie)."""
        from ndomo.security.shell import decide  # lazy: keeps the models importable on their own

        best = None
        for rules in self.layers or ["ask"]:
            decision = decide(command, rules, cwd=cwd, roots=roots, secret_globs=secret_globs)
            if best is None or STRICTNESS.get(decision.action, 2) > STRICTNESS.get(best.action, 2):
                best = decision
        return best


class TaskPolicy(Schema):
    """Several `task` maps at once; an agent may be called only as far as every layer allows.

    Only built by `permissions.intersect` when glob keys make an exact single map impossible.
    """

    model_config = ConfigDict(frozen=True)

    layers: list[dict[str, Action]]


class AgentPermission(Schema):
    """What an agent may do; unset permissions ask, except asking the user and delegating."""

    model_config = ConfigDict(extra="forbid")

    edit: Action = "ask"
    write: Action = "ask"
    bash: Action | dict[str, Action] | InstanceOf[BashPolicy] = "ask"
    webfetch: Action = "ask"
    question: Action = "allow"
    task: dict[str, Action] | InstanceOf[TaskPolicy] = Field(default_factory=dict)
    plan_db: Action = "ask"
    # Network for a shell command inside the OS sandbox (same shapes as `bash`): allow gives
    # it without asking, ask (default) only with the user's approval of the command, deny never.
    network: Action | dict[str, Action] | InstanceOf[BashPolicy] = "ask"
    # MCP tools by `<server>/<tool>` pattern (`"github/*": ask`, `"time/get_current_time":
    # allow`); a tool no pattern matches is asked.
    mcp: Action | dict[str, Action] | InstanceOf[TaskPolicy] = "ask"

    @field_validator("task", mode="before")
    @classmethod
    def _bare_task_action(cls, value):
        # `task: deny` is shorthand for `task: {"*": deny}`.
        if isinstance(value, str):
            return {"*": value}
        return value

    @field_validator("bash", "task", "network", "mcp", mode="before")
    @classmethod
    def _no_null_maps(cls, value):
        if value is None:
            raise ValueError("must be allow, ask or deny, or a map of pattern to action")
        return value

    @field_validator("bash", "task", "network", "mcp", mode="after")
    @classmethod
    def _no_blank_patterns(cls, value):
        if isinstance(value, dict):
            blank = [k for k in value if not k.strip()]
            if blank:
                raise ValueError(f"empty pattern {blank[0]!r}: name a command or agent, or use '*'")
        return value


class AgentFrontmatter(Schema):
    """The YAML block between the `---` lines."""

    model_config = ConfigDict(extra="forbid")

    description: str = Field(min_length=1)
    mode: AgentKind = "all"
    model: str | None = None
    temperature: float | None = Field(default=None, ge=0, le=2)
    default_mode: ModeName | None = None
    permission: AgentPermission = Field(default_factory=AgentPermission)
    # The file-count scope the agent works under (a builder): its own numbers, or `true` for
    # the configured `threshold` settings; unset: not scoped.
    threshold: Threshold | Literal[True] | None = None
    # the agent's write contract: any (default) or design (a planner: design artifacts and plans only)
    writes: Literal["any", "design"] = "any"

    @field_validator("default_mode")
    @classmethod
    def _known_mode(cls, value: str | None, info: ValidationInfo) -> str | None:
        modes = (info.context or {}).get("modes")
        if value is not None and modes is not None and value not in modes:
            raise ValueError(f"unknown mode {value!r}; modes: {', '.join(sorted(modes))}")
        return value

    @property
    def role(self) -> str | None:
        """What the agent is for, from its contract rather than its name: "planner" (writes
        design artifacts and plans only), "builder" (works under a file-count threshold)."""
        if self.writes == "design":
            return "planner"
        return "builder" if self.threshold is not None else None

    def own_threshold(self) -> Threshold | None:
        """The agent's own numbers (None: unscoped, or scoped with the settings' numbers)."""
        return self.threshold if isinstance(self.threshold, Threshold) else None


class AgentDef(AgentFrontmatter):
    """A loaded agent: frontmatter, name (file stem), prompt body and where it came from."""

    name: str
    prompt: str
    source: str

    @field_validator("name")
    @classmethod
    def _valid_name(cls, value: str) -> str:
        if not AGENT_NAME_RE.match(value):
            raise ValueError(f"invalid agent name {value!r}: use letters, digits, '.', '_' or '-'")
        return value

    @property
    def is_primary(self) -> bool:
        return self.mode in ("primary", "all")

    @property
    def is_subagent(self) -> bool:
        return self.mode in ("subagent", "all")
