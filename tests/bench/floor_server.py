"""The floor for LSP latency: a minimal pygls server answering the same requests, doing nothing."""

from __future__ import annotations

from lsprotocol import types
from pygls.lsp.server import LanguageServer

server = LanguageServer("floor", "0", text_document_sync_kind=types.TextDocumentSyncKind.Full)


@server.feature(types.TEXT_DOCUMENT_CODE_ACTION)
def code_action(params: types.CodeActionParams) -> list[types.CodeAction]:
    return [types.CodeAction(title="noop", kind=types.CodeActionKind.QuickFix)]


@server.command("ndomo.mode.get")
def mode_get(*args) -> dict:
    return {"session": "s", "mode": "discussion", "agent": "foreman", "modes": ["discussion"]}


if __name__ == "__main__":
    server.start_io()
