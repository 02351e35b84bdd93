"""The model-client interface the agents depend on, and the provider switch."""

from __future__ import annotations

import importlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from .capabilities import Capabilities
from .errors import ModelError
from .messages import Message, StreamEvent, ToolSpec
from .probe import Probe

if TYPE_CHECKING:
    from ndomo.config import ModelConfig


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
        max_tokens: int | None = None,
    ) -> AsyncIterator[StreamEvent]:
        """Events of one completion, at most `max_tokens` of answer (None: the client's
        own cap); raises ModelError subclasses. Close it to abort the request."""
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


__all__ = ["ModelClient", "Probe", "make_client"]
