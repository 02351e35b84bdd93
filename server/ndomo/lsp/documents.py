"""One didSave handler for every feature that reacts to saved files (plan views, agent files);
and which document the user works in (open, change, save), so commands without a uri go to
its folder."""

from __future__ import annotations

from lsprotocol import types
from pygls.uris import to_fs_path

from ndomo.lsp.server import Feature


class DocumentsFeature(Feature):
    name = "documents"

    def register(self) -> None:
        ls = self.server

        @ls.feature(types.TEXT_DOCUMENT_DID_OPEN)
        def did_open(params: types.DidOpenTextDocumentParams) -> None:
            ls.touch(params.text_document.uri)

        @ls.feature(types.TEXT_DOCUMENT_DID_CHANGE)
        def did_change(params: types.DidChangeTextDocumentParams) -> None:
            ls.touch(params.text_document.uri)

        @ls.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=True))
        async def did_save(params: types.DidSaveTextDocumentParams) -> None:
            await ls.wait_app()
            uri = params.text_document.uri
            ls.touch(uri)
            text = params.text
            if text is None:  # the client did not send it: the open buffer is what was saved
                doc = ls.workspace.get_text_document(uri)
                text = doc.source
            path = to_fs_path(uri)
            if path is None:
                return
            await ls.save_listeners.notify(path, text)
