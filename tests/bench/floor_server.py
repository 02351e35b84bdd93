"""The floor for LSP latency: a minimal pygls server answering the same requests with
constant answers of the same shape and size as ndomo's (4 code actions carrying
`ndomo.turn` arguments; the mode report with the three modes), doing no other work."""

from __future__ import annotations

from lsprotocol import types
from pygls.lsp.server import LanguageServer

server = LanguageServer("floor", "0", text_document_sync_kind=types.TextDocumentSyncKind.Full)


TITLES = [
    "ndomo: Ask about this",
    "ndomo: Research this",
    "ndomo: Fix with craftsman",
    "ndomo: Plan with foreman",
]
MODES = [
    {
        "name": "discussion",
        "summary": "Ultra-concise planning. Writes limited to design artifacts. "
        "Crystallises into a committed plan.",
        "iteration_cap": 8,
    },
    {
        "name": "brainstorming",
        "summary": "Deep research: web, code tools and memory. Findings externalised to notes.",
        "iteration_cap": 16,
    },
    {
        "name": "autopilot",
        "summary": "Full autonomy end to end. Re-plans on failure. Hands back "
        "only when truly blocked.",
        "iteration_cap": 40,
    },
]


@server.feature(types.TEXT_DOCUMENT_CODE_ACTION)
def code_action(params: types.CodeActionParams) -> list[types.CodeAction]:
    rng = params.range
    args = {
        "prompt": "constant prompt of a typical length for a selection action",
        "uri": params.text_document.uri,
        "range": {
            "start": {"line": rng.start.line, "character": rng.start.character},
            "end": {"line": rng.end.line, "character": rng.end.character},
        },
        "agent": "craftsman",
        "mode": "autopilot",
    }
    return [
        types.CodeAction(
            title=t,
            kind=types.CodeActionKind.Refactor,
            command=types.Command(title=t, command="ndomo.turn", arguments=[args]),
        )
        for t in TITLES
    ]


@server.command("ndomo.mode.get")
def mode_get(*args) -> dict:
    return {
        "session": "0123456789abcdef0123456789abcdef",
        "mode": "discussion",
        "agent": "foreman",
        "modes": MODES,
    }


if __name__ == "__main__":
    server.start_io()
