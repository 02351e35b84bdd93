"""Report configuration problems: one showMessage, one diagnostic per bad line."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types
from pygls.uris import from_fs_path

from ndomo.lsp.feature import Feature

if TYPE_CHECKING:
    from ndomo.app import App


class ConfigReportFeature(Feature):
    name = "config"

    def register(self) -> None:
        pass

    async def on_ready(self, app: App) -> None:
        problems = app.config_problems
        if not problems:
            return
        files = sorted({p.source for p in problems if p.line is not None})
        keys = ", ".join(p.key for p in problems)
        where = ", ".join(files) or problems[0].source
        self.server.window_show_message(
            types.ShowMessageParams(
                type=types.MessageType.Error,
                message=f"ndomo: invalid configuration in {where} ({keys}); defaults are used for those keys.",
            )
        )
        by_file: dict[str, list[types.Diagnostic]] = defaultdict(list)
        for p in problems:
            if p.line is None:
                continue
            col = p.column or 0
            by_file[p.source].append(
                types.Diagnostic(
                    range=types.Range(
                        start=types.Position(line=p.line, character=col),
                        end=types.Position(line=p.line, character=max(col + 1, p.end_column or 0)),
                    ),
                    message=f"{p.key}: {p.message}",
                    severity=types.DiagnosticSeverity.Error,
                    source="ndomo",
                )
            )
        for path, diags in by_file.items():
            self.server.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri=from_fs_path(str(Path(path))), diagnostics=diags)
            )
