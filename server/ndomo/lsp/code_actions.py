"""Code actions on a selection: ask, research, fix with craftsman, plan with foreman.

None of them runs anything until chosen: each carries an `ndomo.turn` command with the
selection's uri and range.
"""

from __future__ import annotations

from lsprotocol import types

from ndomo.lsp.server import Feature

SELECTION_ACTIONS = [
    # title, agent, mode, prompt
    (
        "ndomo: Ask about this",
        "foreman",
        "discussion",
        "Explain the selected code and answer questions about it.",
    ),
    (
        "ndomo: Research this",
        "foreman",
        "brainstorming",
        "Research the selected code: how it works, what uses it, risks.",
    ),
    (
        "ndomo: Fix with craftsman",
        "craftsman",
        "autopilot",
        "Fix the problems in the selected code.",
    ),
    (
        "ndomo: Plan with foreman",
        "foreman",
        "discussion",
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
        def code_actions(params: types.CodeActionParams) -> list[types.CodeAction]:
            return self.selection_actions(params) + self.diagnostic_fixes(params)

    def selection_actions(self, params: types.CodeActionParams) -> list[types.CodeAction]:
        if "ndomo.turn" not in self.server.protocol.fm.commands:
            return []
        uri, rng = params.text_document.uri, params.range
        out = []
        for title, agent, mode, prompt in SELECTION_ACTIONS:
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
                    command=types.Command(title=title, command="ndomo.turn", arguments=[args]),
                )
            )
        return out

    def diagnostic_fixes(self, params: types.CodeActionParams) -> list[types.CodeAction]:
        fixes = []
        for provider in self.server.quick_fix_providers:
            fixes.extend(provider(params))
        return fixes
