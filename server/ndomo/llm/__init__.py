"""Model clients: OpenAI-compatible (default) and Anthropic (optional)."""

from .capabilities import Capabilities
from .client import ModelClient, Probe, make_client
from .errors import (
    ModelAuthError,
    ModelBadResponse,
    ModelContextExceeded,
    ModelContextTooSmall,
    ModelEmptyStream,
    ModelError,
    ModelRateLimited,
    ModelRequestRejected,
    ModelServerError,
    ModelTimeout,
    ModelToolsUnsupported,
    ModelUnreachable,
)
from .messages import (
    Finished,
    Message,
    StreamEvent,
    TextChunk,
    ThoughtChunk,
    ToolCall,
    ToolCallReady,
    ToolSpec,
    Usage,
    UsageEvent,
)

__all__ = [
    "Capabilities",
    "ModelContextExceeded",
    "ModelContextTooSmall",
    "ModelEmptyStream",
    "ModelToolsUnsupported",
    "Finished",
    "Message",
    "ModelAuthError",
    "ModelBadResponse",
    "ModelClient",
    "ModelError",
    "ModelRateLimited",
    "ModelRequestRejected",
    "ModelServerError",
    "ModelTimeout",
    "ModelUnreachable",
    "Probe",
    "StreamEvent",
    "TextChunk",
    "ThoughtChunk",
    "ToolCall",
    "ToolCallReady",
    "ToolSpec",
    "Usage",
    "UsageEvent",
    "make_client",
]
