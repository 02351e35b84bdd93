"""Report configuration problems: one showMessage, one diagnostic per bad line — per folder,
at start and again when its settings change (lines fixed since are cleared)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types
from pygls.uris import from_fs_path

from ndomo.lsp.protocol import DIAGNOSTIC_SOURCE
from ndomo.lsp.server import Feature

if TYPE_CHECKING:
    from ndomo.app import App
    from ndomo.config import ConfigProblem


class ConfigReportFeature(Feature):
    name = "config"

    def __init__(self, server) -> None:
        super().__init__(server)
        self.published: dict[Path, set[str]] = {}  # folder root → uris with diagnostics
        self.reported: dict[Path, list[ConfigProblem]] = {}  # folder root → problems said

    def register(self) -> None:
        pass

    async def on_ready(self, app: App) -> None:
        self.report(app)

    async def on_settings(self, app: App) -> None:
        self.report(app)

    async def on_close(self, app: App) -> None:
        self._publish(app, {})
        self.reported.pop(app.root, None)

    def report(self, app: App) -> None:
        problems = app.config_problems
        if problems and problems != self.reported.get(app.root):
            files = sorted({p.source for p in problems if p.line is not None})
            keys = ", ".join(p.key for p in problems)
            where = ", ".join(files) or problems[0].source
            self.server.window_show_message(
                types.ShowMessageParams(
                    type=types.MessageType.Error,
                    message=f"ndomo: invalid configuration in {where} ({keys}); defaults are used for those keys.",
                )
            )
        self.reported[app.root] = list(problems)
        by_file: dict[str, list[types.Diagnostic]] = defaultdict(list)
        for p in problems:
            if p.line is None:
                continue
            col = p.column or 0
            by_file[from_fs_path(str(Path(p.source)))].append(
                types.Diagnostic(
                    range=types.Range(
                        start=types.Position(line=p.line, character=col),
                        end=types.Position(line=p.line, character=max(col + 1, p.end_column or 0)),
                    ),
                    message=f"{p.key}: {p.message}",
                    severity=types.DiagnosticSeverity.Error,
                    source=DIAGNOSTIC_SOURCE,
                )
            )
        self._publish(app, by_file)

    def _publish(self, app: App, by_uri: dict[str, list[types.Diagnostic]]) -> None:
        for uri in sorted(set(by_uri) | self.published.get(app.root, set())):
            self.server.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri=uri, diagnostics=by_uri.get(uri, []))
            )
        self.published[app.root] = set(by_uri)
