"""Code actions on a selection: ask, research, fix with the builder, plan with the planner,
and a quick fix per diagnostic another server shows there ("Fix this problem with …").

None of them runs anything until chosen: each carries an `ndomo.turn` command with the
selection's uri and range (and the quick fix, its diagnostic).
"""

from __future__ import annotations

from lsprotocol import types

from ndomo.lsp.names import pick
from ndomo.lsp.protocol import DIAGNOSTIC_SOURCE, command
from ndomo.lsp.server import Feature

# title ({agent}: the agent picked), agent role, mode role, prompt — by purpose, never by
# name (ndomo.features.catalog.pick): a workspace's own planner or builder gets the same actions.
SELECTION_ACTIONS = [
    (
        "ndomo: Ask about this",
        "planner",
        "plan",
        "Explain the selected code and answer questions about it.",
    ),
    (
        "ndomo: Research this",
        "planner",
        "research",
        "Research the selected code: how it works, what uses it, risks.",
    ),
    ("ndomo: Fix with {agent}", "builder", "build", "Fix the problems in the selected code."),
    (
        "ndomo: Plan with {agent}",
        "planner",
        "plan",
        "Plan the change to the selected code as an atomic plan.",
    ),
]


FIX_PROBLEM = "Fix the problem the editor reports in the selected code."
MAX_FIXES = 5  # a line with many diagnostics: the first few, the menu stays readable
MESSAGE_CHARS = 2000  # a diagnostic's message as the turn carries it


def _range(rng: types.Range) -> dict:
    return {
        "start": {"line": rng.start.line, "character": rng.start.character},
        "end": {"line": rng.end.line, "character": rng.end.character},
    }


def problem(d: types.Diagnostic) -> dict:
    """The diagnostic as `TurnRequest.diagnostics` takes it (message, source, code, range)."""
    code = d.code if isinstance(d.code, (int, str)) else None
    return {
        "message": d.message[:MESSAGE_CHARS],
        "source": d.source[:200] if d.source else None,
        "code": code,
        "severity": int(d.severity) if d.severity is not None else None,
        "range": _range(d.range),
    }


class CodeActionsFeature(Feature):
    name = "code-actions"

    def register(self) -> None:
        ls = self.server

        @ls.feature(
            types.TEXT_DOCUMENT_CODE_ACTION,
            types.CodeActionOptions(
                code_action_kinds=[types.CodeActionKind.Refactor, types.CodeActionKind.QuickFix]
            ),
        )
        async def code_actions(params: types.CodeActionParams) -> list[types.CodeAction]:
            ls.touch(params.text_document.uri)  # editors ask as the cursor moves: the active file
            return (
                self.problem_fixes(params)
                + self.selection_actions(params)
                + await self.diagnostic_fixes(params)
            )

    def selection_actions(self, params: types.CodeActionParams) -> list[types.CodeAction]:
        if command("turn") not in self.server.protocol.fm.commands:
            return []
        uri, rng = params.text_document.uri, params.range
        out = []
        for title, agent_role, mode_role, prompt in SELECTION_ACTIONS:
            picked = pick(self.server, agent_role=agent_role, mode_role=mode_role)
            if picked is None:
                continue
            agent, mode = picked
            title = title.format(agent=agent)
            args = {
                "prompt": prompt,
                "uri": uri,
                "range": _range(rng),
                "agent": agent,
                "mode": mode,
            }
            out.append(
                types.CodeAction(
                    title=title,
                    kind=types.CodeActionKind.Refactor,
                    command=types.Command(title=title, command=command("turn"), arguments=[args]),
                )
            )
        return out

    def problem_fixes(self, params: types.CodeActionParams) -> list[types.CodeAction]:
        """A quick fix per diagnostic of another server in the range (a type checker's, a
        linter's): the builder's turn on that line, carrying the diagnostic itself."""
        if command("turn") not in self.server.protocol.fm.commands:
            return []
        theirs = [d for d in params.context.diagnostics if d.source != DIAGNOSTIC_SOURCE][
            :MAX_FIXES
        ]
        picked = pick(self.server, agent_role="builder", mode_role="build") if theirs else None
        if picked is None:
            return []
        agent, mode = picked
        out = []
        for d in theirs:
            title = f"ndomo: Fix this problem with {agent}"
            args = {
                "prompt": FIX_PROBLEM,
                "uri": params.text_document.uri,
                "range": _range(d.range),
                "diagnostics": [problem(d)],
                "agent": agent,
                "mode": mode,
            }
            out.append(
                types.CodeAction(
                    title=title,
                    kind=types.CodeActionKind.QuickFix,
                    diagnostics=[d],
                    command=types.Command(title=title, command=command("turn"), arguments=[args]),
                )
            )
        return out

    async def diagnostic_fixes(self, params: types.CodeActionParams) -> list[types.CodeAction]:
        """Each feature's quick fixes on its own diagnostics (one that fails is logged)."""
        answers = await self.server.quick_fix_providers.notify(params)
        return [fix for fixes in answers for fix in fixes]
