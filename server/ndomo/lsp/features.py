"""The editor surface put together: every feature, in the order they start, and the server
built with them. The one place features are listed; the server itself imports none."""

from __future__ import annotations

from ndomo.lsp.agent_diagnostics import AgentDiagnosticsFeature
from ndomo.lsp.code_actions import CodeActionsFeature
from ndomo.lsp.commands import CommandsFeature
from ndomo.lsp.config_report import ConfigReportFeature
from ndomo.lsp.documents import DocumentsFeature
from ndomo.lsp.lifecycle import LifecycleFeature
from ndomo.lsp.plan_diagnostics import PlanDiagnosticsFeature
from ndomo.lsp.process import NdomoProtocol
from ndomo.lsp.progress import TurnProgressFeature
from ndomo.lsp.server import Feature, NdomoServer
from ndomo.lsp.settings import SettingsFeature
from ndomo.lsp.status import StatusFeature

FEATURES: tuple[type[Feature], ...] = (
    LifecycleFeature,
    SettingsFeature,
    ConfigReportFeature,
    CommandsFeature,
    CodeActionsFeature,
    StatusFeature,
    DocumentsFeature,
    TurnProgressFeature,
    PlanDiagnosticsFeature,
    AgentDiagnosticsFeature,
)


def create_server() -> NdomoServer:
    """The server `ndomo serve` runs: ndomo's protocol (`lsp.process`) and every feature."""
    server = NdomoServer(protocol_cls=NdomoProtocol)
    for cls in FEATURES:
        feat = cls(server)
        feat.register()
        server.features.append(feat)
    return server
