"""Optional Anthropic Messages API client; `anthropic` is imported only when used."""

from __future__ import annotations

import importlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from .capabilities import Capabilities
from .errors import (
    ModelBadResponse,
    ModelContextExceeded,
    ModelError,
    ModelTimeout,
    ModelToolsUnsupported,
    map_error,
)
from .messages import (
    Finished,
    Message,
    StreamEvent,
    TextChunk,
    ToolCall,
    ToolCallReady,
    ToolSpec,
    Usage,
    UsageEvent,
)
from .probe import Probe

if TYPE_CHECKING:
    from ndomo.config import ModelConfig

DEFAULT_BASE_URL = "https://api.anthropic.com"
MAX_TOKENS = 8192
CACHE = {"type": "ephemeral"}
STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
}


def to_anthropic(messages: list[Message]) -> tuple[str, list[dict[str, Any]]]:
    """(system prompt, messages): tool results become user turns, same-role turns merge."""
    system = "\n\n".join(m.content or "" for m in messages if m.role == "system")
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "system":
            continue
        blocks: list[dict[str, Any]] = []
        if m.role == "tool":
            role = "user"
            blocks.append(
                {
                    "type": "tool_result",
                    "tool_use_id": m.tool_call_id or "",
                    "content": m.content or "",
                }
            )
        else:
            role = m.role
            if m.content:
                blocks.append({"type": "text", "text": m.content})
            for c in m.tool_calls:
                blocks.append(
                    {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments}
                )
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    return system, out


def to_anthropic_tools(tools: list[ToolSpec]) -> list[dict[str, Any]]:
    """Tools with a cache breakpoint on the last one: the tool list is part of the stable prefix."""
    out = [
        {"name": t.name, "description": t.description, "input_schema": t.parameters} for t in tools
    ]
    if out:
        out[-1]["cache_control"] = CACHE
    return out


def system_blocks(system: str) -> list[dict[str, Any]]:
    """The system prompt as one cached block: byte-identical across a session's turns."""
    return [{"type": "text", "text": system, "cache_control": CACHE}]


def _sdk() -> Any:
    try:
        return importlib.import_module("anthropic")
    except ImportError:
        raise ModelError("provider 'anthropic' needs `pip install ndomo[anthropic]`") from None


class AnthropicClient:
    def __init__(
        self, cfg: ModelConfig, *, probe_timeout_s: float = 5.0, env: dict[str, str] | None = None
    ) -> None:
        self.sdk = _sdk()
        self.cfg = cfg
        # The shared default points at a local OpenAI-style server; it means "unset" here.
        url = cfg.base_url.rstrip("/")
        self.url = DEFAULT_BASE_URL if url == "http://127.0.0.1:11434/v1" else url
        self.probe_timeout_s = min(probe_timeout_s, cfg.timeout_s)
        self.caps = Capabilities(stream_tools=True, tools=True)
        self._client = self.sdk.AsyncAnthropic(
            base_url=self.url,
            api_key=cfg.resolved_api_key(env) or "missing",
            timeout=cfg.timeout_s,
            max_retries=cfg.max_retries,
        )

    async def aclose(self) -> None:
        await self._client.close()

    def _map(self, exc: BaseException, model: str, route: str = "chat") -> ModelError:
        status = getattr(exc, "status_code", None)
        retried = isinstance(exc, self.sdk.APIConnectionError) or (
            isinstance(status, int) and (status in (408, 409, 429) or status >= 500)
        )
        return map_error(
            exc,
            self.sdk,
            url=self.url,
            model=model,
            api_key_env=self.cfg.api_key_env,
            timeout_s=self.cfg.timeout_s,
            route=route,
            retries=self.cfg.max_retries if route == "chat" and retried else 0,
        )

    def streams(self, tools: list[ToolSpec]) -> bool:
        return True

    async def learn(self) -> Capabilities:
        return self.caps

    async def stream(
        self,
        messages: list[Message],
        tools: list[ToolSpec],
        *,
        model: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> AsyncIterator[StreamEvent]:
        model_name = model or self.cfg.name
        system, wire = to_anthropic(messages)
        params: dict[str, Any] = {
            "model": model_name,
            "max_tokens": max_tokens or MAX_TOKENS,
            "messages": wire,
            "stream": True,
        }
        if system:
            params["system"] = system_blocks(system)
        if tools:
            params["tools"] = to_anthropic_tools(tools)
        temp = temperature if temperature is not None else self.cfg.temperature
        if temp is not None:
            params["temperature"] = min(temp, 1.0)  # Anthropic's range is 0..1
        try:
            sdk_stream = await self._client.messages.create(**params)
        except self.sdk.APIError as exc:
            raise self._map(exc, model_name) from exc
        try:
            async for event in self._events(sdk_stream):
                yield event
        finally:
            await sdk_stream.close()

    async def _events(self, sdk_stream: Any) -> AsyncIterator[StreamEvent]:
        usage = Usage()
        blocks: dict[int, dict[str, Any]] = {}
        reason: str | None = None
        done = False
        try:
            async for ev in sdk_stream:
                kind = getattr(ev, "type", "")
                if kind == "message_start":
                    usage.prompt_tokens = getattr(ev.message.usage, "input_tokens", 0) or 0
                elif kind == "content_block_start" and ev.content_block.type == "tool_use":
                    blocks[ev.index] = {
                        "id": ev.content_block.id,
                        "name": ev.content_block.name,
                        "parts": [],
                    }
                elif kind == "content_block_delta":
                    if ev.delta.type == "text_delta" and ev.delta.text:
                        yield TextChunk(text=ev.delta.text)
                    elif ev.delta.type == "input_json_delta" and ev.index in blocks:
                        blocks[ev.index]["parts"].append(ev.delta.partial_json)
                elif kind == "content_block_stop" and ev.index in blocks:
                    b = blocks.pop(ev.index)
                    yield ToolCallReady(
                        call=ToolCall.from_raw(b["id"], b["name"], "".join(b["parts"]))
                    )
                elif kind == "message_delta":
                    reason = getattr(ev.delta, "stop_reason", None) or reason
                    usage.completion_tokens = getattr(ev.usage, "output_tokens", 0) or 0
                elif kind == "message_stop":
                    done = True
        except self.sdk.APITimeoutError as exc:
            raise ModelTimeout(
                f"model endpoint {self.url} stopped sending for {self.cfg.timeout_s:g}s mid-answer; "
                "raise model.timeout_s",
                url=self.url,
            ) from exc
        except self.sdk.APIConnectionError as exc:
            raise ModelBadResponse(
                f"model endpoint {self.url} cut the stream off mid-answer; try again", url=self.url
            ) from exc
        except self.sdk.APIError as exc:  # an `error` event inside the stream
            mapped = self._map(exc, self.cfg.name)
            if isinstance(mapped, (ModelContextExceeded, ModelToolsUnsupported)):
                raise mapped from exc
            body = getattr(exc, "body", None)
            err = body.get("error") if isinstance(body, dict) else None
            kind = f"{err.get('type')}: " if isinstance(err, dict) and err.get("type") else ""
            text = (
                err.get("message") if isinstance(err, dict) else getattr(exc, "message", str(exc))
            )
            raise ModelBadResponse(
                f"model endpoint {self.url} sent an error event mid-stream ({kind}{text}); "
                "try again later",
                url=self.url,
            ) from exc
        if not done:
            raise ModelBadResponse(
                f"model endpoint {self.url} ended the stream before the answer was finished; "
                "try again",
                url=self.url,
            )
        yield UsageEvent(usage=usage)
        yield Finished(reason=STOP_REASONS.get(reason or "", reason or "stop"))

    async def probe(self) -> Probe:
        try:
            page = await self._client.with_options(
                timeout=self.probe_timeout_s, max_retries=0
            ).models.list()
            models = sorted(str(m.id) for m in (getattr(page, "data", None) or []))
        except Exception as exc:  # noqa: BLE001 - a probe reports any failure (mapped by _map), never raises
            return Probe(
                url=self.url, ok=False, detail=str(self._map(exc, self.cfg.name, route="models"))
            )
        listed = "available" if self.cfg.name in models else "not among them"
        return Probe(
            url=self.url,
            ok=True,
            detail=f"{len(models)} models; '{self.cfg.name}' {listed}",
            models=models,
        )


__all__ = ["AnthropicClient", "to_anthropic", "to_anthropic_tools"]
