"""OpenAI-compatible streaming client (OpenAI, Ollama, vLLM, llama.cpp, LM Studio, OpenRouter …)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, AsyncIterator

import openai

from .assembly import ToolCallAssembler
from .client import Probe
from .errors import ModelBadResponse, ModelError, ModelTimeout
from .messages import Finished, Message, StreamEvent, TextDelta, ToolCallReady, ToolSpec, Usage, UsageEvent
from .retry import RetryPolicy
from .sdk_errors import map_error, with_retries

if TYPE_CHECKING:
    from ndomo.config import ModelConfig

NO_KEY = "not-needed"  # local servers accept any key, but the SDK insists on one


def to_openai_messages(messages: list[Message]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for m in messages:
        item: dict[str, Any] = {"role": m.role}
        if m.role == "assistant" and m.tool_calls:
            item["content"] = m.content or None
            item["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.wire_arguments()}}
                for c in m.tool_calls
            ]
        else:
            item["content"] = m.content or ""
        if m.role == "tool":
            item["tool_call_id"] = m.tool_call_id or ""
        if m.name and m.role in ("user", "system"):
            item["name"] = m.name
        out.append(item)
    return out


def to_openai_tools(tools: list[ToolSpec]) -> list[dict[str, Any]]:
    return [
        {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}
        for t in tools
    ]


class OpenAIClient:
    def __init__(
        self,
        cfg: ModelConfig,
        *,
        retry_base_delay: float = 0.5,
        retry_max_delay: float = 20.0,
        probe_timeout_s: float = 5.0,
        env: dict[str, str] | None = None,
    ) -> None:
        self.cfg = cfg
        self.url = cfg.base_url.rstrip("/")
        self.retry = RetryPolicy(max_retries=cfg.max_retries, base_delay=retry_base_delay, max_delay=retry_max_delay)
        self.probe_timeout_s = min(probe_timeout_s, cfg.timeout_s)
        self._sleep = asyncio.sleep  # replaceable so tests can observe backoff without waiting
        self._stream_options = True  # dropped once if a server rejects the parameter
        self._sdk = openai.AsyncOpenAI(
            base_url=self.url,
            api_key=cfg.resolved_api_key(env) or NO_KEY,
            timeout=openai.Timeout(cfg.timeout_s, connect=min(10.0, cfg.timeout_s)),
            max_retries=0,
        )

    async def aclose(self) -> None:
        await self._sdk.close()

    def _describe(self, model: str, route: str = "chat") -> dict[str, Any]:
        return {
            "url": self.url,
            "model": model,
            "api_key_env": self.cfg.api_key_env,
            "timeout_s": self.cfg.timeout_s,
            "route": route,
        }

    def _params(self, messages: list[Message], tools: list[ToolSpec], model: str, temperature: float | None) -> dict:
        params: dict[str, Any] = {"model": model, "messages": to_openai_messages(messages), "stream": True}
        if tools:
            params["tools"] = to_openai_tools(tools)
            params["tool_choice"] = "auto"
        temp = temperature if temperature is not None else self.cfg.temperature
        if temp is not None:
            params["temperature"] = temp
        if self._stream_options:
            params["stream_options"] = {"include_usage": True}
        return params

    async def _open(self, params: dict[str, Any]) -> Any:
        try:
            return await with_retries(
                lambda: self._sdk.chat.completions.create(**params),
                openai,
                self.retry,
                sleep=self._sleep,
                **self._describe(params["model"]),
            )
        except ModelError as err:
            cause = err.__cause__
            if err.status == 400 and "stream_options" in str(getattr(cause, "message", "")) and self._stream_options:
                self._stream_options = False
                params.pop("stream_options", None)
                return await self._open(params)
            raise

    async def stream(
        self,
        messages: list[Message],
        tools: list[ToolSpec],
        *,
        model: str | None = None,
        temperature: float | None = None,
    ) -> AsyncIterator[StreamEvent]:
        model_name = model or self.cfg.name
        sdk_stream = await self._open(self._params(messages, tools, model_name, temperature))
        try:
            async for event in self._events(sdk_stream):
                yield event
        finally:
            # Runs on completion, error, cancellation and aclose(): the socket never outlives us.
            await sdk_stream.close()

    async def _events(self, sdk_stream: Any) -> AsyncIterator[StreamEvent]:
        calls = ToolCallAssembler()
        finish: str | None = None
        usage: Usage | None = None
        chunks = 0
        iterator = sdk_stream.__aiter__()
        while True:
            try:
                chunk = await iterator.__anext__()
            except StopAsyncIteration:
                break
            except openai.APITimeoutError as exc:
                raise ModelTimeout(
                    f"model endpoint {self.url} stopped sending for {self.cfg.timeout_s:g}s mid-answer", url=self.url
                ) from exc
            except openai.APIConnectionError as exc:
                raise ModelBadResponse(f"model endpoint {self.url} cut the stream off mid-answer", url=self.url) from exc
            except openai.APIError as exc:  # an error event inside the stream
                raise ModelBadResponse(
                    f"model endpoint {self.url} reported an error mid-stream: {exc.message}", url=self.url
                ) from exc
            except (ValueError, TypeError) as exc:  # JSONDecodeError, pydantic validation
                raise ModelBadResponse(
                    f"model endpoint {self.url} sent a malformed stream chunk ({type(exc).__name__})", url=self.url
                ) from exc
            chunks += 1
            raw_usage = getattr(chunk, "usage", None)
            if raw_usage is not None:
                usage = Usage(
                    prompt_tokens=getattr(raw_usage, "prompt_tokens", 0) or 0,
                    completion_tokens=getattr(raw_usage, "completion_tokens", 0) or 0,
                )
            for choice in getattr(chunk, "choices", None) or []:
                if getattr(choice, "index", 0) not in (0, None):
                    continue
                delta = choice.delta
                if delta is not None:
                    if delta.content:
                        yield TextDelta(text=delta.content)
                    for frag in delta.tool_calls or []:
                        fn = frag.function
                        calls.add(frag.index, frag.id, fn.name if fn else None, fn.arguments if fn else None)
                if choice.finish_reason:
                    finish = choice.finish_reason
                    emitted = calls.finish()
                    if emitted and finish == "stop":
                        finish = "tool_calls"  # some local servers say "stop" after tool calls
                    for call in emitted:
                        yield ToolCallReady(call=call)
        if finish is None:
            if chunks == 0:
                ctype = sdk_stream.response.headers.get("content-type", "none")
                raise ModelBadResponse(
                    f"model endpoint {self.url} sent a reply that is not a chat completion stream "
                    f"(content-type {ctype})",
                    url=self.url,
                )
            raise ModelBadResponse(f"model endpoint {self.url} ended the stream before the answer was finished", url=self.url)
        if usage is not None:
            yield UsageEvent(usage=usage)
        yield Finished(reason=finish)

    async def probe(self) -> Probe:
        try:
            page = await self._sdk.with_options(timeout=self.probe_timeout_s, max_retries=0).models.list()
            models = sorted(str(m.id) for m in (getattr(page, "data", None) or []))
        except Exception as exc:  # a probe reports, it never raises
            err = map_error(exc, openai, retries=0, **self._describe(self.cfg.name, route="models"))
            return Probe(url=self.url, ok=False, detail=str(err))
        if self.cfg.name in models:
            detail = f"{len(models)} models; '{self.cfg.name}' available"
        else:
            detail = f"{len(models)} models; configured model '{self.cfg.name}' is not among them"
        return Probe(url=self.url, ok=True, detail=detail, models=models)


__all__ = ["OpenAIClient", "to_openai_messages", "to_openai_tools"]
