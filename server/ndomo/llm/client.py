"""The model-client interface the agents depend on, and the provider switch."""

from __future__ import annotations

import importlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from .capabilities import Capabilities
from .errors import ModelError
from .messages import Message, StreamEvent, ToolSpec

if TYPE_CHECKING:
    from ndomo.config import ModelConfig


class Probe(BaseModel):
    """Result of a health check: never an exception, so `ndomo health` can always report."""

    url: str
    ok: bool
    detail: str
    models: list[str] = Field(default_factory=list)


@runtime_checkable
class ModelClient(Protocol):
    url: str
    caps: Capabilities  # what was learned about the endpoint + model; the runtime persists it

    def streams(self, tools: list[ToolSpec]) -> bool:
        """Whether a request with these tools is streamed (`model.stream` and what was learned)."""
        ...

    async def learn(self) -> Capabilities:
        """Ask the server what it says about itself (context window, tool support); never raises."""
        ...

    def stream(
        self,
        messages: list[Message],
        tools: list[ToolSpec],
        *,
        model: str | None = None,
        temperature: float | None = None,
    ) -> AsyncIterator[StreamEvent]:
        """Events of one completion; raises ModelError subclasses. Close it to abort the request."""
        ...

    async def probe(self) -> Probe: ...

    async def aclose(self) -> None:
        """Release the HTTP connections."""
        ...


def make_client(cfg: ModelConfig, **options: object) -> ModelClient:
    """Client for `cfg.provider`; `options` go to the client (e.g. `probe_timeout_s`)."""
    if cfg.provider == "anthropic":
        try:
            importlib.import_module("anthropic")
        except ImportError:
            raise ModelError("provider 'anthropic' needs `pip install ndomo[anthropic]`") from None
        from .anthropic_client import AnthropicClient

        return AnthropicClient(cfg, **options)  # type: ignore[arg-type]  # options are the clients' own keywords, passed through
    from .openai_client import OpenAIClient

    return OpenAIClient(cfg, **options)  # type: ignore[arg-type]  # options are the clients' own keywords, passed through
