"""ndomo's own LSP protocol: every method, capability and payload beyond the LSP spec.

The clients are editors/vscode/src (extension.ts, save.ts, status.ts, chat/model.ts) and
editors/nvim/lua/ndomo (init.lua, save.lua, turns.lua); docs/editors.md ("The LSP
surface") describes the same wire format for any other client. Every sender in `lsp/`
takes the names from here.

The payloads are TypedDicts — the JSON as it goes on the wire, checked by mypy — not
attrs or pydantic classes: this module loads before `initialize` is answered, when
pydantic is not imported yet (tests/unit/perf/test_lazy_start.py), and lsprotocol's
converter would rename `turn_id` to `turnId`. The turn events themselves are the
engine's models (`ndomo.runtime.events`), sent as their JSON dump.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypedDict, cast

if TYPE_CHECKING:
    from ndomo.runtime.events import Status, TurnEvent

# -- methods ---------------------------------------------------------------------------------

# server → client notification, `StatusParams`: after every change of the session's mode,
# agent, busy state, last outcome or plan progress, per workspace folder.
STATUS = "ndomo/status"
# server → client notification: one turn event (`ndomo.runtime.events`: turn_started, text,
# tool_started, tool_output, tool_finished, plan_changed, notice, decision, turn_finished),
# each with `kind` and `turn_id`; consecutive `text` deltas of a turn go out merged
# (LspHost.emit). `tool_finished` carries `sandbox` and `files` (a card's details) and
# `decision` how an approval of the running call was decided (runtime/callnotes.py).
TURN_EVENT = "ndomo/turn/event"
# server → client request, `SaveDocumentsParams` → `SaveDocumentsResult`: save what a turn
# edited before a shell command reads the disk; sent only to a client announcing it.
SAVE_DOCUMENTS = "ndomo/saveDocuments"
# server → client request, {uris} → {items: [{uri, diagnostics}]}: what the editor now shows
# for files a turn edited (VS Code: languages.getDiagnostics, Neovim: vim.diagnostic.get),
# asked only of a client announcing `experimental.ndomo.diagnostics`.
DIAGNOSTICS = "ndomo/diagnostics"

# server → client request, `ApproveParams` → `ApproveResult`: an approval with its parts apart
# (reason, subject, rule, sandbox, network, choices), so the client lays it out; sent only to
# a client announcing `experimental.ndomo.approvals` (others get `window/showMessageRequest`
# with `ApproveParams.message`, the same question in three short lines).
APPROVE = "ndomo/approve"

# -- capabilities ----------------------------------------------------------------------------

# The key of ndomo's entry in `capabilities.experimental`, on both sides: the client's
# `ClientCapability` in `initialize`'s params, the server's `ServerCapability` in its result.
EXPERIMENTAL = "ndomo"

# -- commands --------------------------------------------------------------------------------

COMMAND_PREFIX = "ndomo."  # every action is the `workspace/executeCommand` `ndomo.<action>`


def command(action: str) -> str:
    """The command name of an action: `turn` → `ndomo.turn`."""
    return COMMAND_PREFIX + action


# The diagnostics the server publishes (plan tasks, agent files, configuration).
DIAGNOSTIC_SOURCE = "ndomo"

# -- payloads --------------------------------------------------------------------------------


class PlanProgress(TypedDict):
    """`StatusParams.plan`: the session's committed plan."""

    id: str
    slug: str
    status: str
    done: int
    total: int


class StatusParams(TypedDict):
    """`ndomo/status`: the engine's `Status` plus the folder it is of."""

    session: str
    mode: str
    agent: str
    busy: bool
    state: str  # what is going on in plain words; empty once a turn ended well
    plan: PlanProgress | None
    # {"turn": {prompt, completion} | None, "session": {prompt, completion},
    #  "cost": {"turn", "session", "currency"} | None (with model.price)}
    usage: dict[str, Any] | None
    auto_allow: bool  # sandbox.auto_allow is on: sandboxed, offline commands run unasked
    folder: str | None  # the workspace folder's uri; None for a server without folders
    trust: str  # the folder's trust: trusted | untrusted | unknown (ndomo.trust)


class SaveDocumentsParams(TypedDict):
    uris: list[str]


class SaveDocumentsResult(TypedDict):
    saved: list[str]  # the uris the editor saved; the server writes the others itself


class ClientCapability(TypedDict, total=False):
    """`capabilities.experimental.ndomo` in the client's `initialize` params."""

    saveDocuments: bool  # the client answers `ndomo/saveDocuments`
    diagnostics: bool  # the client answers `ndomo/diagnostics`
    approvals: bool  # the client answers `ndomo/approve`


class ServerCapability(TypedDict):
    """`capabilities.experimental.ndomo` in the `initialize` result: the catalog's lists
    (`ndomo.features.catalog.Catalog`), so editors build their menus before any command."""

    modes: list[dict[str, Any]]
    agents: list[dict[str, Any]]
    problems: list[str]
    trust: str  # the first folder's trust: trusted | untrusted | unknown


class ApprovalOption(TypedDict):
    """One answer of `ndomo/approve`: the first is the primary action."""

    id: str  # once | session | project | deny | never (`ApprovalChoice`)
    label: str  # the button's words ("Run once", "Always")
    detail: str  # what it does ("allow `pytest *` in this project from now on")


class ApproveParams(TypedDict):
    """`ndomo/approve`: the approval's parts, each made inert (controls shown as escapes)."""

    message: str  # the short question (`ApprovalRequest.short()`), for a notification
    reason: str  # why it is asked, one line ("`pytest` matches no rule")
    permission: str  # bash, edit, write, webfetch, control, …
    subject: str  # the command, path or url, whole (newlines kept), capped
    agent: str
    mode: str
    rule: str  # what "Always" saves ("pytest *"); the subject when no scoped rule
    sandbox: str  # a shell call's sandbox ("sandboxed (bubblewrap)"); "" otherwise
    network: bool | None  # a shell call: network if allowed; None for other permissions
    destinations: list[str]  # a shell call: the only hosts it reaches
    choices: list[ApprovalOption]


class ApproveResult(TypedDict):
    choice: str | None  # an `ApprovalOption.id`; None (or any id not offered) denies


class TaskData(TypedDict):
    """A plan-task diagnostic's `data`, sent back in a code-action request."""

    plan: str  # the plan's slug
    plan_id: str
    task_id: int
    ord: int


# -- building and reading them ----------------------------------------------------------------


def status_params(status: Status, folder: str | None, trust: str) -> StatusParams:
    return cast(
        "StatusParams", {**status.model_dump(mode="json"), "folder": folder, "trust": trust}
    )


def turn_event_params(event: TurnEvent) -> dict[str, Any]:
    return event.model_dump(mode="json")


def client_capability(capabilities: Any) -> ClientCapability:
    """What the client announced under `capabilities.experimental.ndomo` (empty if nothing)."""
    experimental = getattr(capabilities, "experimental", None) if capabilities else None
    own = experimental.get(EXPERIMENTAL) if isinstance(experimental, dict) else None
    return cast("ClientCapability", own) if isinstance(own, dict) else {}


def saved_uris(result: SaveDocumentsResult | Any) -> list[str]:
    """The uris a `SaveDocumentsResult` names; none from an answer of another shape."""
    saved = result.get("saved") if isinstance(result, dict) else None
    return [u for u in saved if isinstance(u, str)] if isinstance(saved, list) else []


def approve_choice(result: ApproveResult | Any) -> str | None:
    """The choice an `ndomo/approve` answer names (pygls hands a custom request's result
    over as a dict or as an object with attributes); None from an answer of another shape."""
    choice = result.get("choice") if isinstance(result, dict) else getattr(result, "choice", None)
    return choice if isinstance(choice, str) else None
