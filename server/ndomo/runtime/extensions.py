"""Every way a feature extends ndomo, in one place, each with its signature.

A feature is a module with `setup(plugins: Plugins) -> None`, listed in
`runtime/plugins.py:FEATURES` or named by an `ndomo.features` entry point of another
package; `setup` registers what the feature adds on the `Plugins` it is given. The
points are sized to their use: each has users today ([n]), and one with a single user
names the second in sight.

Registered in `setup(plugins)`:

- `plugins.hooks.add(hook)` — `HookBase` (runtime/hooks.py): `phase`, `name`, `priority`,
  `applies(ctx) -> bool`, `async run(ctx) -> HookResult | None`; in a phase, by priority
  then name. [14 hooks in 6 phases]
- `plugins.tools.add(tool)` — a `ToolDescriptor` made by `@tool(name, Params, …)`
  (runtime/tools.py) around `async (ctx, params) -> str | ToolResult`. [the modes' own]
- `plugins.tools.later(load)` — `ToolLoader = () -> Iterable[ToolDescriptor]`: a feature's
  tools whose modules load at their first call. What they are (name, description, schema,
  class) comes from the manifest kept with the tool schemas (runtime/schema_cache.py) for
  ndomo's own code; without one, or for a loader outside ndomo, `load()` runs at once.
  Offered and fenced as `DeferredTool`s; every check of a call sees the loaded tool.
  [every feature's tools: files, code, shell, web, interaction, plan]
- `plugins.tools.guards` — `ToolGuard`: `async check(ctx, tool, params) -> str | None`
  (a refusal). [the modes' contracts, the craftsman scope]
- `plugins.tools.policy` — `PermissionPolicy`: `visible(ctx, tool) -> bool`,
  `async check(ctx, tool, params) -> PermissionDecision`. [agents/policy.py]
- `plugins.tools.providers`, `plugins.tools.after_call` — `ToolProvider`, `AfterCall`
  (runtime/tools.py). [reflexes; the craftsman scope]
- `plugins.prompts.add(contributor)` — `PromptContributor` (runtime/prompts.py):
  `async contribute(ctx) -> str | None`, `placement`, `priority`. [agent, environment,
  modes, instructions, recall …]
- `plugins.slash.add(spec)` — `CommandSpec` (runtime/slash.py) with
  `SlashHandler = async (ctx, args) -> Any`. [/mode, /help …]
- `plugins.slash.later(make)` — `make: () -> Iterable[CommandSpec]`, called when a command
  is first looked up (a prompt that is no `/` command never calls it); a name registered by
  then wins. [1: every action with the slash surface, from the composition root]
- `plugins.slash.listers` — `SlashLister = async (app, ctx | None) -> list[CommandSpec]`:
  commands that come and go, shown by `/help` and ACP's command list; the feature handles
  them itself before the dispatch. [1: MCP prompts, a PRE_DISPATCH hook expands them]
- `plugins.add_mode(mode)` — `AgentMode` (modes/base.py): contract, tools, hooks, prompt,
  commands, guards, `on_stop`, `on_runtime`. [3 modes]
- `plugins.on_runtime` — `OnRuntime`: `(runtime) -> None`. [every mode, crash recovery]
- `plugins.on_session_end` — `SessionEndListeners`: `async (runtime, session_id) -> None`.
  [1: served processes stop; in sight: the MCP servers an ACP `session/new` brings,
  issues [mcp] and [acp]]
- `plugins.on_file_written` — `FileWrittenListeners`: `async (ctx, rel, text) -> str | None`, a
  note for the tool's result. [1: plan-in-a-file; in sight: the editor's diagnostics
  after an edit, issue [context]]

Told by the runtime (added from `on_runtime`, or by a front end):

- `Runtime.status_listeners` — `StatusListeners`: `async (status) -> None`. [the LSP's
  `ndomo/status`]
- `Runtime.event_listeners` — `EventListeners`: `async (ctx, event) -> None`. [editor
  progress, plan diagnostics, autopilot's plan tracking]

Below the runtime, the store tells `PlanStore.commit_listeners` (`() -> None`) of each of
its commits [plan diagnostics]. Above it, the LSP front end's own features
(`lsp/feature.py:Feature`: `register()`, `on_ready(app)`, `on_settings(app)`,
`on_close(app)`) meet through `NdomoServer.save_listeners` (`async (path, text)`, each
saved document), `command_listeners` (`async (name)`, after each executed command) and
`quick_fix_providers` (`(CodeActionParams) -> list[CodeAction]` [1: plan tasks; in sight:
the "fix this problem" quick fix on any diagnostic, issue [context]]); they are typed in
`lsp/server.py`, the only floor that may name lsprotocol.

Every list of callbacks is a `Listeners` (`ndomo/listeners.py`): told in order, a failing
one logged and skipped, answers gathered. Two kinds stay plain lists: `on_runtime`, a
setup step (a mode whose setup failed must not run half attached, so its failure fails
the runtime), and the tool registry's own `providers` and `after_call`, whose loops sit
in the tool-call path of runtime/tools.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeAlias

from ndomo.listeners import Listeners

if TYPE_CHECKING:
    from ndomo.runtime.context import Engine, TurnContext
    from ndomo.runtime.events import Status, TurnEvent

# Called with each Runtime built from the plugins, as it is built (to add listeners, start
# work): a setup step, so a failure fails the runtime.
OnRuntime: TypeAlias = Callable[["Engine"], None]

# Told that a new session replaced the one named, in that runtime (e.g. stop the servers
# that session started): `async (runtime, session_id) -> None`.
SessionEndListeners: TypeAlias = Listeners[["Engine", str]]


# Told of a whole file a tool wrote (`write`, `edit`, `apply_patch`):
# `async (ctx, rel, text) -> str | None`, a note for the tool's result, None when it has
# nothing to say (plan-in-a-file). One that fails answers `file_write_failed`'s note.
FileWrittenListeners: TypeAlias = Listeners[["TurnContext", str, str]]


def file_write_failed(exc: Exception, ctx: TurnContext, rel: str, text: str) -> str:
    """A failed `on_file_written` listener's note: the write itself succeeded, say what failed."""
    return f"(note: {rel} was written, but {type(exc).__name__}: {exc})"


# Told of every status change (mode, agent, busy, outcome, plan progress):
# `async (status) -> None`.
StatusListeners: TypeAlias = Listeners[["Status"]]

# Told of every turn event, after the turn's Host: `async (ctx, event) -> None`.
EventListeners: TypeAlias = Listeners[["TurnContext", "TurnEvent"]]
