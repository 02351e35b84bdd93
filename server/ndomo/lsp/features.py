"""Every editor feature, in the order they start: the one place features are listed."""

from __future__ import annotations

from ndomo.lsp.agent_diagnostics import AgentDiagnosticsFeature
from ndomo.lsp.code_actions import CodeActionsFeature
from ndomo.lsp.commands import CommandsFeature
from ndomo.lsp.config_report import ConfigReportFeature
from ndomo.lsp.documents import DocumentsFeature
from ndomo.lsp.feature import Feature
from ndomo.lsp.lifecycle import LifecycleFeature
from ndomo.lsp.plan_diagnostics import PlanDiagnosticsFeature
from ndomo.lsp.progress import TurnProgressFeature
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
