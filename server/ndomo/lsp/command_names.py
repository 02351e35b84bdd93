"""The LSP-surface action names, known without importing the action modules.

`initialize` must list every `ndomo.<name>` command, but importing the action modules
(pydantic models, the runtime, the store) costs ~0.2 s on a cold start; the handlers load
them after `initialized`. tests/unit/editor/test_lazy_start.py fails when this list and
`load_actions().all("lsp")` disagree, so a new action is never missed silently.
"""

LSP_ACTION_NAMES: tuple[str, ...] = (
    "agent.set",
    "agents.list",
    "catalog",
    "approvals.list",
    "approvals.revoke",
    "cancel",
    "commands",
    "health",
    "memory.delete",
    "memory.list",
    "mode.get",
    "mode.set",
    "plan.approve",
    "plan.delete",
    "plan.list",
    "plan.open",
    "plan.progress",
    "plan.search",
    "plan.show",
    "plan.status",
    "reflex.list",
    "reflex.run",
    "session.export",
    "session.list",
    "session.new",
    "session.open",
    "status",
    "task.list",
    "task.next",
    "task.status",
    "toolcall.cancel",
    "trust.get",
    "trust.set",
    "turn",
    "undo",
)

# Commands that only read: they do not wake the plan-diagnostics refresh.
READ_ONLY_ACTIONS: frozenset[str] = frozenset(
    {
        "agents.list",
        "approvals.list",
        "catalog",
        "commands",
        "health",
        "memory.list",
        "mode.get",
        "plan.list",
        "plan.progress",
        "plan.search",
        "plan.show",
        "reflex.list",
        "session.export",
        "trust.get",
        "session.list",
        "session.open",
        "status",
        "task.list",
    }
)
