"""Code actions on a selection: ask, research, fix with the builder, plan with the planner.

None of them runs anything until chosen: each carries an `ndomo.turn` command with the
selection's uri and range.
"""

from __future__ import annotations

from lsprotocol import types

from ndomo.lsp.names import pick
from ndomo.lsp.protocol import command
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
            return self.selection_actions(params) + await self.diagnostic_fixes(params)

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
                "range": {
                    "start": {"line": rng.start.line, "character": rng.start.character},
                    "end": {"line": rng.end.line, "character": rng.end.character},
                },
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

    async def diagnostic_fixes(self, params: types.CodeActionParams) -> list[types.CodeAction]:
        """Each feature's quick fixes on its own diagnostics (one that fails is logged)."""
        answers = await self.server.quick_fix_providers.notify(params)
        return [fix for fixes in answers for fix in fixes]
