"""What a turn tells its host while it runs. Plain pydantic, so every host can serialise it."""

from __future__ import annotations

from typing import Any, Literal

from ndomo.schema import Schema


class Status(Schema):
    """The `ndomo/status` payload (public interface)."""

    session: str
    mode: str
    agent: str
    busy: bool
    state: str  # craftsman scope state, or the last turn's outcome
    plan: dict[str, Any] | None = None  # {id, slug, done, total} of the session's plan
    # {"turn": {prompt, completion} | None, "session": {prompt, completion},
    #  "cost": {"turn", "session", "currency"} | None (with model.price)}
    usage: dict[str, Any] | None = None
    # `sandbox.auto_allow` is on: sandboxed, offline shell commands run without asking
    auto_allow: bool = False


class TurnEvent(Schema):
    kind: str
    turn_id: int | None = None


class TurnSelection(Schema):
    """The file and lines a code action's turn is about (its request's uri and range)."""

    path: str  # as the workspace shows it (relative to its folder)
    start_line: int | None = None  # 1-based, the selection's whole lines
    end_line: int | None = None
    text: str | None = None  # the selected lines, cut


class TurnStarted(TurnEvent):
    kind: Literal["turn_started"] = "turn_started"
    session: str
    agent: str
    mode: str
    prompt: str
    # a turn on a selection (a code action's): where; absent for a typed prompt
    selection: TurnSelection | None = None


class TextDelta(TurnEvent):
    kind: Literal["text"] = "text"
    text: str


class ThoughtDelta(TurnEvent):
    """The model's reasoning, streamed before its answer (where the server sends it)."""

    kind: Literal["thought"] = "thought"
    text: str


class ToolStarted(TurnEvent):
    kind: Literal["tool_started"] = "tool_started"
    call_id: str
    name: str
    arguments: dict[str, Any]


class FileDiff(Schema):
    """One file a call changed, for its card: a unified diff (`--- a/p`, `+++ b/p`, hunks;
    `/dev/null` on the side of a created or deleted file), cut at DIFF_SHOWN characters."""

    path: str  # as the model named it (workspace-relative)
    kind: Literal["create", "modify", "delete", "move"]
    diff: str
    line: int = 1  # the first changed line in the new text (1-based)
    cut: bool = False  # the diff was cut: the card says so, Open diff shows the hunks it has


class ToolFinished(TurnEvent):
    kind: Literal["tool_finished"] = "tool_finished"
    call_id: str
    name: str
    status: Literal["done", "failed", "cancelled", "refused"]
    summary: str
    # a shell command's confinement as it ran: "sandboxed · offline", "sandboxed · network:
    # pypi.org", "sandboxed · network", "not sandboxed"; None for other tools
    sandbox: str | None = None
    # the files the call changed (write, edit, apply_patch …); None when it changed none
    files: list[FileDiff] | None = None


class Decision(TurnEvent):
    """How an approval of a running call was decided: "approved once by you", "denied by you",
    "auto-allowed (sandboxed, offline)". Stored with the call's result."""

    kind: Literal["decision"] = "decision"
    call_id: str | None = None  # the live call's id (as in tool_started)
    text: str
    auto: bool = False  # decided by ndomo (sandbox.auto_allow), not by the user's answer


class ToolOutput(TurnEvent):
    """Output of a running command (`bash`, `serve`) as it arrives; bounded per call."""

    kind: Literal["tool_output"] = "tool_output"
    call_id: str
    name: str
    text: str


class PlanChanged(TurnEvent):
    kind: Literal["plan_changed"] = "plan_changed"
    plan_id: str | None = None


class Notice(TurnEvent):
    kind: Literal["notice"] = "notice"
    level: Literal["info", "warning", "error"] = "info"
    message: str


class TurnFinished(TurnEvent):
    kind: Literal["turn_finished"] = "turn_finished"
    status: str
    answer: str = ""
    error: str | None = None
