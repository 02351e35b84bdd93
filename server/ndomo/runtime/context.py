"""Per-request state that phases, hooks, tools and the executor share.

The floor of the engine: the registries (hooks, tools, prompts, slash commands), the
modes and the Runtime all name `TurnContext`, so it names none of them. What a turn sees
of them is declared here and implemented above: `Engine` (the Runtime running the turn)
and `OfferedTool` (a tool the model is offered, `runtime.tools.ToolDescriptor`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, Protocol, TypeVar

from pydantic import ConfigDict, Field, PrivateAttr

from ndomo.runtime.problems import Problem, Range
from ndomo.schema import Schema

# How long bookkeeping that waits for the model's first event waits at most (`first_event`).
QUIET_S = 0.05

if TYPE_CHECKING:
    from ndomo.agents.loader import AgentSet
    from ndomo.agents.schema import AgentDef
    from ndomo.app import App
    from ndomo.listeners import Listeners
    from ndomo.llm.messages import Message
    from ndomo.runtime.events import Status, TurnEvent
    from ndomo.runtime.host import Host


class FileMention(Schema):
    """`@calc.py`: a workspace file; the editor's unsaved text, when it has some, wins."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["file"]
    path: str = Field(
        min_length=1,
        max_length=4096,
        description="Relative to the workspace, absolute, or a file URI.",
    )
    text: str | None = Field(
        default=None, description="The editor's unsaved text of the file (wins over the disk)."
    )


class SymbolMention(Schema):
    """`@symbol:Name`: a symbol the editor's language servers know, by its location."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["symbol"]
    name: str = Field(min_length=1, max_length=500)
    path: str = Field(min_length=1, max_length=4096)
    range: Range
    text: str | None = Field(
        default=None,
        description="The editor's unsaved text of the whole file (wins over the disk).",
    )


class LocatedProblem(Problem):
    path: str = Field(min_length=1, max_length=4096)


class ProblemsMention(Schema):
    """`@problems`: the diagnostics the editor shows (other servers': a type checker, a linter)."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["problems"]
    items: list[LocatedProblem] = Field(default=[], max_length=1000)


class PlanMention(Schema):
    """`@plan`: the session's committed plan."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["plan"]


Mention = Annotated[
    FileMention | SymbolMention | ProblemsMention | PlanMention, Field(discriminator="kind")
]


class TurnRequest(Schema):
    """What `ndomo.turn`, `ndomo run` and a delegated `task` ask for."""

    model_config = ConfigDict(extra="forbid")
    prompt: str = Field(min_length=1)
    uri: str | None = Field(default=None, description="Document the selection is in.")
    range: Range | None = None
    diagnostics: list[Problem] = Field(
        default=[],
        max_length=50,
        description="Problems the editor shows in the document (the quick fix's diagnostic).",
    )
    agent: str | None = Field(
        default=None, description="Agent for this turn (session's agent if unset)."
    )
    mode: str | None = Field(
        default=None, description="Mode for this turn (session's mode if unset)."
    )
    task_id: str | None = Field(default=None, description="Plan task this turn executes.")
    session: str | None = Field(default=None, description="Session id (the current one if unset).")
    mentions: list[Mention] = Field(
        default=[],
        max_length=100,
        description="What the prompt's @-mentions name, as the editor resolved them "
        "(files with their unsaved text, symbols, problems, the plan).",
    )
    # The mentioned text, read and cut by the front end before the turn (a refused mention
    # is the request's error): under the prompt in the model's message, not in the turn's
    # recorded prompt. Private: a client cannot send it.
    _attached: str = PrivateAttr(default="")

    @property
    def attached(self) -> str:
        return self._attached

    def attach(self, text: str) -> TurnRequest:
        self._attached = text
        return self


@dataclass
class SessionState:
    id: str
    mode: str
    agent: str
    committed_plan_id: str | None = None
    last_outcome: str = ""  # the `state` of ndomo/status: empty when there is nothing to say
    busy: bool = False
    tokens_in: int = 0  # the session's usage so far: stored turns, then each turn's
    tokens_out: int = 0
    last_turn: tuple[int, int] | None = None  # the last turn's (prompt, completion) tokens


class TurnSummary(Schema):
    """What a turn returns: the answer of `ndomo.turn`, `ndomo run` and a delegated `task`."""

    turn_id: int | None
    session: str
    agent: str
    mode: str
    status: str
    answer: str = ""
    error: str | None = None
    handback: str | None = None
    iterations: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    modified: list[str] = []
    payload: Any = None


T = TypeVar("T")


class Engine(Protocol):
    """The Runtime (`runtime.runtime`) as the parts of a turn use it: hooks, tools, modes,
    the builder and the executor sit below the Runtime and reach it through this. Its own
    objects that name the context back (its `Plugins`, its `ToolCallCoordinator`) are
    fetched by class, `part(Plugins)`, by the modules that declare that class."""

    @property
    def app(self) -> App: ...

    @property
    def status_listeners(self) -> Listeners[[Status]]: ...

    @property
    def event_listeners(self) -> Listeners[[TurnContext, TurnEvent]]: ...

    def part(self, kind: type[T]) -> T: ...

    async def emit(self, ctx: TurnContext, event: TurnEvent) -> None: ...

    async def publish_status(self, state: SessionState) -> None: ...

    async def agents(self) -> AgentSet: ...

    async def check_agent(self, agent: str) -> AgentDef: ...

    async def new_session(self) -> SessionState: ...

    async def set_mode(self, mode: str, session_id: str | None = None) -> SessionState: ...

    async def set_agent(self, agent: str, session_id: str | None = None) -> SessionState: ...

    async def run(
        self, request: TurnRequest, host: Host | None = None, *, parent: TurnContext | None = None
    ) -> TurnSummary: ...


class OfferedTool(Protocol):
    """A tool the model is offered in this turn (`runtime.tools.ToolInfo`: loaded or not)."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def core(self) -> bool: ...

    def schema(self) -> dict[str, Any]: ...


@dataclass
class TurnContext:
    app: App
    runtime: Engine
    host: Host
    request: TurnRequest
    session: SessionState
    mode: str
    agent_name: str
    turn_id: int | None = None
    parent_turn_id: int | None = None
    parent: TurnContext | None = None  # the delegating turn, for nested (sub-agent) turns
    depth: int = 0
    agent: AgentDef | None = None  # the agent's definition, once the build step resolved it
    system_prompt: str = ""
    messages: list[Message] = field(default_factory=list)
    tools: Sequence[OfferedTool] = field(default_factory=list)
    status: str = "running"  # done | cancelled | failed | blocked | capped
    answer: str = ""
    error: str | None = None
    handback: str | None = None
    iterations: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    payload: Any = None  # what a slash command or short-circuit returned
    modified: list[Path] = field(default_factory=list)  # distinct files this turn changed
    final_state: str | None = None  # a feature's `ndomo/status` state for after the turn
    fit_noticed: bool = False  # the user was told the request was fitted to the window
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)
    # Set when the model's first event of the turn arrives (or the turn ends without one):
    # work the turn needs before its first tool, not for its first token, waits for it.
    answering: asyncio.Event = field(default_factory=asyncio.Event)
    _parts: dict[type, Any] = field(default_factory=dict, repr=False)

    async def first_event(self, at_most_s: float | None = None) -> None:
        """Until the model's first event went out (`answering`), or `at_most_s`: bookkeeping
        the first token need not wait for (the user message's write, the editor's progress)
        starts behind it instead of beside the request, where it took the loop and the
        store thread from the request's own reading (~4 ms of a 10 ms first token). The cap
        keeps it prompt when the model is slow to begin."""
        if self.answering.is_set():
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(
                self.answering.wait(), QUIET_S if at_most_s is None else at_most_s
            )

    def instance(self, kind: type[T], make: Callable[[], T]) -> T:
        """A feature's per-turn state of class `kind` (the scope guard's Scope, autopilot's
        stops …), made on first use. Keyed by the class, so typed."""
        found = self._parts.get(kind)
        if found is None:
            found = self._parts[kind] = make()
        return found

    def existing(self, kind: type[T]) -> T | None:
        """The feature's per-turn state of class `kind`, if one was made."""
        return self._parts.get(kind)

    @property
    def roots(self) -> list[Path]:
        return [self.app.root]

    def note_modified(self, path: Path) -> None:
        """Count a changed file here and in every delegating turn above."""
        if path not in self.modified:
            self.modified.append(path)
        if self.parent is not None:
            self.parent.note_modified(path)
