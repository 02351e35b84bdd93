"""Problems in agent definition files as diagnostics: at start and whenever one is saved.

A saved `.ndomo/agents/*.md` also replaces the runtime's cached agent set, so the next
turn uses the new definition.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types
from pygls.uris import from_fs_path

from ndomo.lsp.feature import Feature

if TYPE_CHECKING:
    from ndomo.agents.loader import AgentSet
    from ndomo.app import App

SEVERITY = {"error": types.DiagnosticSeverity.Error, "warning": types.DiagnosticSeverity.Warning}


def agent_diagnostics(agents: AgentSet) -> dict[str, list[types.Diagnostic]]:
    by_uri: dict[str, list[types.Diagnostic]] = defaultdict(list)
    for p in agents.problems:
        by_uri[from_fs_path(str(Path(p.path)))].append(
            types.Diagnostic(
                range=types.Range(
                    start=types.Position(line=p.line, character=0),
                    end=types.Position(line=p.line + 1, character=0),
                ),
                message=p.message,
                severity=SEVERITY.get(p.severity, types.DiagnosticSeverity.Error),
                source="ndomo",
            )
        )
    return dict(by_uri)


class AgentDiagnosticsFeature(Feature):
    name = "agent-diagnostics"

    def __init__(self, server) -> None:
        super().__init__(server)
        self.published: dict[Path, set[str]] = {}  # folder root → uris with diagnostics

    def register(self) -> None:
        self.server.save_listeners.add(self.on_save)

    async def on_ready(self, app: App) -> None:
        await self.reload(app)

    async def on_close(self, app: App) -> None:
        for uri in sorted(self.published.pop(app.root, set())):
            self.server.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri=uri, diagnostics=[])
            )

    async def on_save(self, path: str, text: str) -> None:
        app = self.server.app_of(path)
        p = Path(path)
        from ndomo.agents.loader import PROJECT_AGENTS_DIR

        if app is not None and p.suffix == ".md" and p.parent == app.root / PROJECT_AGENTS_DIR:
            await self.reload(app)

    async def reload(self, app: App) -> None:
        from ndomo.agents.loader import load_agents_async
        from ndomo.runtime.runtime import Runtime

        agents = await load_agents_async(app.trusted_root, Runtime.of(app).plugins.modes)
        app.agents = agents
        diags = agent_diagnostics(agents)
        for uri in sorted(set(diags) | self.published.get(app.root, set())):
            self.server.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri=uri, diagnostics=diags.get(uri, []))
            )
        self.published[app.root] = set(diags)
