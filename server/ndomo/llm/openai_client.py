"""OpenAI-compatible client (OpenAI, Ollama, vLLM, llama.cpp, LM Studio, OpenRouter …).

Streams by default; `model.stream: auto` sends a request again without streaming when a
server cannot stream tool calls (an error, or a stream that ends with nothing in it), and
remembers that in `caps`. Requests go over `transport.py` (asyncio and h11, the OpenAI SDK's retry
policy: `max_retries`, honouring Retry-After); the SDK itself is not used (its import and
per-request cost, docs/performance.md).
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from . import http
from .assembly import ToolCallAssembler
from .budget import json_size
from .capabilities import Capabilities
from .errors import (
    ModelBadResponse,
    ModelContextExceeded,
    ModelEmptyStream,
    ModelError,
    ModelRequestRejected,
    ModelServerError,
    ModelTimeout,
    ModelToolsUnsupported,
    map_error,
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
from .probe import Probe
from .transport import ERRORS, StatusError, StreamError, Transport, events, retryable
from .wire import chat_body, to_openai_messages, to_openai_tools, tools_json_size

if TYPE_CHECKING:
    from ndomo.config import ModelConfig

NO_KEY = "not-needed"  # local servers accept any key; a Bearer header is always sent
OLLAMA_DEFAULT_CTX = 4096  # what Ollama uses when neither num_ctx nor OLLAMA_CONTEXT_LENGTH is set
# Why a server's own report says no tools (`Capabilities.tools_source`)
LLAMA_CPP_NO_TOOLS = (
    "llama.cpp's chat template renders no tools: /props chat_template_caps.supports_tools is false"
)
OLLAMA_NO_TOOLS = "Ollama's /api/show capabilities list no tools"
REPORTED = (LLAMA_CPP_NO_TOOLS, OLLAMA_NO_TOOLS)


def _stream_problem(err: ModelError) -> bool:
    """Failures after which a streamed request with tools is worth one non-streamed try: an
    empty stream, a 5xx, or a plain 4xx refusal (not auth, rate, context, tools or a 404)."""
    return (
        isinstance(err, (ModelEmptyStream, ModelServerError)) or type(err) is ModelRequestRejected
    )


def _other_cap_param(name: str) -> str:
    return "max_tokens" if name == "max_completion_tokens" else "max_completion_tokens"


def _said(exc: StatusError) -> str:
    """The error's message and the body it came from (a server may answer in plain text)."""
    return f"{exc.message} {exc.body}"


def _refuses(exc: StatusError, sent: str, other: str) -> bool:
    """A 400 that names the output-cap parameter it got and the one it wants instead
    (OpenAI: "Unsupported parameter: 'max_tokens' … Use 'max_completion_tokens' instead.")."""
    text = _said(exc)
    return sent in text and other in text


def _org_headers(url: str, env: Mapping[str, str]) -> dict[str, str]:
    """OpenAI's organization and project headers, as its SDK sends them from the environment;
    only to api.openai.com (another host has no use for them)."""
    if urlsplit(url).hostname != "api.openai.com":
        return {}
    pairs = (("openai-organization", "OPENAI_ORG_ID"), ("openai-project", "OPENAI_PROJECT_ID"))
    return {header: env[name] for header, name in pairs if env.get(name)}


class OpenAIClient:
    def __init__(
        self, cfg: ModelConfig, *, probe_timeout_s: float = 5.0, env: dict[str, str] | None = None
    ) -> None:
        self.cfg = cfg
        self.url = cfg.base_url.rstrip("/")
        self.probe_timeout_s = min(probe_timeout_s, cfg.timeout_s)
        self.caps = Capabilities()  # the runtime loads and saves these (per endpoint + model)
        self._stream_options = True  # dropped once if a server rejects the parameter
        # OpenAI's own API wants `max_completion_tokens` (its reasoning models refuse
        # `max_tokens`); every other OpenAI-compatible server reads `max_tokens`. A server that
        # refuses the one it got is answered once more with the other.
        self._cap_param = (
            "max_completion_tokens"
            if urlsplit(self.url).hostname == "api.openai.com"
            else "max_tokens"
        )
        self._http = Transport(
            self.url,
            api_key=cfg.resolved_api_key(env) or NO_KEY,
            timeout_s=cfg.timeout_s,
            max_retries=cfg.max_retries,
            headers=_org_headers(self.url, os.environ if env is None else env),
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    def _map(self, exc: BaseException, model: str, route: str = "chat") -> ModelError:
        return map_error(
            exc,
            ERRORS,
            url=self.url,
            model=model,
            api_key_env=self.cfg.api_key_env,
            timeout_s=self.cfg.timeout_s,
            route=route,
            retries=self.cfg.max_retries if route == "chat" and retryable(exc) else 0,
        )

    def _params(
        self,
        messages: list[Message],
        tools: list[ToolSpec],
        model: str,
        temperature: float | None,
        stream: bool,
        max_tokens: int | None = None,
    ) -> dict:
        params: dict[str, Any] = {
            "model": model,
            "messages": to_openai_messages(messages),
            "stream": stream,
        }
        if max_tokens is not None:
            params[self._cap_param] = max_tokens
        if tools:
            params["tools"] = to_openai_tools(tools)
            params["tool_choice"] = "auto"
        temp = temperature if temperature is not None else self.cfg.temperature
        if temp is not None:
            params["temperature"] = temp
        if stream and self._stream_options:
            params["stream_options"] = {"include_usage": True}
        return params

    async def _open(self, params: dict[str, Any]) -> http.Response:
        """POST the chat request: the response with its body unread (the caller closes it)."""
        try:
            return await self._http.open("POST", "/chat/completions", chat_body(params))
        except StatusError as exc:
            if (
                exc.status_code == 400
                and "stream_options" in _said(exc)
                and params.get("stream_options")
            ):
                self._stream_options = False
                params.pop("stream_options", None)
                return await self._open(params)
            other = _other_cap_param(self._cap_param)
            if (
                exc.status_code == 400
                and self._cap_param in params
                and _refuses(exc, self._cap_param, other)
            ):
                params[other] = params.pop(self._cap_param)
                self._cap_param = other
                return await self._open(params)
            raise self._map(exc, params["model"]) from exc
        except http.HTTPError as exc:
            raise self._map(exc, params["model"]) from exc

    def streams(self, tools: list[ToolSpec]) -> bool:
        """Whether the next request is streamed: `model.stream`, and in auto what was learned."""
        setting = self.cfg.stream
        if setting is True or setting is False:
            return setting
        return not (tools and self.caps.stream_tools is False)

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
        try:
            if not self.streams(tools):
                async for event in self._whole(
                    self._params(messages, tools, model_name, temperature, False, max_tokens)
                ):
                    yield event
                return
            sent = False
            try:
                async for event in self._streamed(
                    self._params(messages, tools, model_name, temperature, True, max_tokens)
                ):
                    sent = True
                    yield event
                if tools and self.cfg.stream == "auto":
                    self.caps.stream_tools = True
                return
            except ModelError as err:
                if sent or not tools or self.cfg.stream != "auto" or not _stream_problem(err):
                    raise
                first = err
            # auto: the server could not stream this request with tools; once more, whole.
            try:
                async for event in self._whole(
                    self._params(messages, tools, model_name, temperature, False, max_tokens)
                ):
                    yield event
            except ModelError as err:
                err.message = f"{err.message} (a streamed try failed first: {first.message})"
                err.args = (err.message,)
                raise
            self.caps.stream_tools = False
        except ModelToolsUnsupported as err:
            said = f": {err.said}" if err.said else ""
            self.caps.tools, self.caps.tools_source = False, f"the server refused tools{said}"
            raise
        if tools:
            self.caps.tools, self.caps.tools_source = True, None

    def _calibrate(self, params: dict[str, Any], usage: Usage | None) -> None:
        if usage is not None and usage.prompt_tokens > 0:
            # the request's size (`request_size`), measured only now: not before the request
            tools = params.get("tools")
            size = json_size(params["messages"]) + (tools_json_size(tools) if tools else 0)
            ratio = size / usage.prompt_tokens
            known = self.caps.bytes_per_token
            # outside 1..8 the server counts something else; small drifts are not worth a store write
            if 1.0 <= ratio <= 8.0 and (known is None or abs(ratio - known) > 0.05 * known):
                self.caps.bytes_per_token = round(ratio, 3)

    async def _whole(self, params: dict[str, Any]) -> AsyncIterator[StreamEvent]:
        response = await self._open(params)
        try:
            raw = await response.aread()
        except http.TimeoutException as exc:
            raise self._map(exc, params["model"]) from exc
        except http.TransportError as exc:
            raise ModelBadResponse(
                f"model endpoint {self.url} cut its answer off; see the model server's log",
                url=self.url,
            ) from exc
        finally:
            await response.aclose()
        try:
            reply = json.loads(raw)
        except ValueError:
            reply = None
        choices = reply.get("choices") if isinstance(reply, dict) else None
        if not choices or not isinstance(choices, list):
            said = raw[:200].decode(errors="replace") if reply is None else str(reply)[:200]
            raise ModelBadResponse(
                f"model endpoint {self.url} answered without a choice: {said}; "
                "see the model server's log",
                url=self.url,
            )
        try:
            choice = choices[0]
            message = choice.get("message") or {}
            content = message.get("content")
            calls = []
            for n, raw_call in enumerate(message.get("tool_calls") or []):
                fn = raw_call.get("function") or {}
                args = fn.get("arguments")
                args = args if isinstance(args, str) else json.dumps(args) if args else ""
                calls.append(
                    ToolCall.from_raw(raw_call.get("id") or f"call_{n}", fn.get("name") or "", args)
                )
            raw_usage = reply.get("usage")
            usage = (
                Usage(
                    prompt_tokens=raw_usage.get("prompt_tokens") or 0,
                    completion_tokens=raw_usage.get("completion_tokens") or 0,
                )
                if isinstance(raw_usage, dict)
                else None
            )
            finish = choice.get("finish_reason") or "stop"
        except (AttributeError, TypeError, ValueError) as exc:  # not the shape of an answer
            raise ModelBadResponse(
                f"model endpoint {self.url} sent a malformed answer ({type(exc).__name__}: {exc}); "
                "see the model server's log",
                url=self.url,
            ) from exc
        if content:
            yield TextChunk(text=str(content))
        for call in calls:
            yield ToolCallReady(call=call)
        if usage is not None:
            self._calibrate(params, usage)
            yield UsageEvent(usage=usage)
        yield Finished(reason="tool_calls" if calls and finish == "stop" else str(finish))

    async def _streamed(self, params: dict[str, Any]) -> AsyncIterator[StreamEvent]:
        response = await self._open(params)
        try:
            async for event in self._events(response, params):
                yield event
        finally:
            # Runs on completion, error, cancellation and aclose(): the socket never outlives us.
            await response.aclose()

    async def _chunks(self, response: http.Response) -> AsyncIterator[Any]:
        """The stream's JSON chunks, as the SDK read them: up to `data: [DONE]` (the rest is
        read, so the connection is kept for the next request), an `error` in a chunk or an
        `event: error` raised as a `StreamError`, other named events skipped."""
        done = False
        async for sse in events(response):
            if done:
                continue
            if sse.data.startswith("[DONE]"):
                done = True
                continue
            named = sse.event is not None and not sse.event.startswith("response.")
            if named and sse.event != "error":
                continue
            data = json.loads(sse.data)
            if isinstance(data, dict) and data.get("error"):
                error = data["error"]
                said = error.get("message") if isinstance(error, dict) else None
                raise StreamError(
                    said
                    if isinstance(said, str) and said
                    else "An error occurred during streaming",
                    error,
                )
            if not named:
                yield data

    async def _events(
        self, response: http.Response, params: dict[str, Any]
    ) -> AsyncIterator[StreamEvent]:
        calls = ToolCallAssembler()
        finish: str | None = None
        usage: Usage | None = None
        chunks = 0
        iterator = self._chunks(response).__aiter__()
        while True:
            try:
                chunk = await iterator.__anext__()
            except StopAsyncIteration:
                break
            except http.TimeoutException as exc:
                raise ModelTimeout(
                    f"model endpoint {self.url} stopped sending for {self.cfg.timeout_s:g}s mid-answer; "
                    "raise model.timeout_s or use a faster model",
                    url=self.url,
                ) from exc
            except http.TransportError as exc:
                raise ModelBadResponse(
                    f"model endpoint {self.url} cut the stream off mid-answer; "
                    "see the model server's log",
                    url=self.url,
                ) from exc
            except StreamError as exc:  # an error event inside the stream
                raise self._stream_error(exc) from exc
            except ValueError as exc:  # JSONDecodeError, a body that is not UTF-8
                raise ModelBadResponse(
                    f"model endpoint {self.url} sent a malformed stream chunk ({type(exc).__name__}: {exc}); "
                    "see the model server's log",
                    url=self.url,
                ) from exc
            chunks += 1
            try:
                raw_usage = chunk.get("usage")
                if raw_usage:
                    usage = Usage(
                        prompt_tokens=raw_usage.get("prompt_tokens") or 0,
                        completion_tokens=raw_usage.get("completion_tokens") or 0,
                    )
                choices = [c for c in chunk.get("choices") or [] if c.get("index", 0) in (0, None)]
                pieces = []
                for choice in choices:
                    delta = choice.get("delta") or {}
                    frags = [
                        (
                            f.get("index"),
                            f.get("id"),
                            (f.get("function") or {}).get("name"),
                            (f.get("function") or {}).get("arguments"),
                        )
                        for f in delta.get("tool_calls") or []
                    ]
                    thought = delta.get("reasoning_content") or delta.get("reasoning")
                    pieces.append(
                        (thought, delta.get("content"), frags, choice.get("finish_reason"))
                    )
            except (AttributeError, TypeError, ValueError) as exc:  # not the shape of a chunk
                raise ModelBadResponse(
                    f"model endpoint {self.url} sent a malformed stream chunk ({type(exc).__name__})",
                    url=self.url,
                ) from exc
            for thought, content, frags, finish_reason in pieces:
                if thought and isinstance(thought, str):
                    yield ThoughtChunk(text=thought)
                if content:
                    yield TextChunk(text=str(content))
                for frag in frags:
                    calls.add(*frag)
                if finish_reason:
                    finish = finish_reason
                    emitted = calls.finish()
                    if emitted and finish == "stop":
                        finish = "tool_calls"  # some local servers say "stop" after tool calls
                    for call in emitted:
                        yield ToolCallReady(call=call)
        if finish is None:
            if chunks == 0:
                ctype = response.headers.get("content-type", "none")
                if "text/event-stream" in ctype:
                    raise ModelEmptyStream(
                        f"model endpoint {self.url} opened an event stream and ended it without a single chunk "
                        "(the server's log says why; llama-cpp-python does this for tool calls it cannot stream); "
                        "set model.stream: false or auto",
                        url=self.url,
                    )
                raise ModelBadResponse(
                    f"model endpoint {self.url} answered with content-type {ctype} instead of an event stream; "
                    "check that model.base_url is an OpenAI-compatible API (often ends in /v1)",
                    url=self.url,
                )
            raise ModelBadResponse(
                f"model endpoint {self.url} ended the stream before the answer was finished; "
                "see the model server's log",
                url=self.url,
            )
        if usage is not None:
            self._calibrate(params, usage)
            yield UsageEvent(usage=usage)
        yield Finished(reason=finish)

    def _stream_error(self, exc: Any) -> ModelError:
        mapped = self._map(exc, self.cfg.name)
        if isinstance(mapped, (ModelContextExceeded, ModelToolsUnsupported)):
            return mapped
        text = " ".join(str(getattr(exc, "message", "") or exc).split())[:300]
        return ModelBadResponse(
            f"model endpoint {self.url} sent an error event mid-stream: {text}; "
            "see the model server's log",
            url=self.url,
        )

    # ---- what the server says about itself ---------------------------------------------

    @property
    def root(self) -> str:
        """The server's root (base URL without /v1): where /props and /api/show live."""
        return self.url[: -len("/v1")] if self.url.endswith("/v1") else self.url

    async def server_facts(self) -> dict[str, Any]:
        """Context window and tool support as the server reports them, from whichever of
        vLLM's /v1/models, llama.cpp's /props, Ollama's /api/show, LM Studio's /api/v0/models
        answers. Never raises; an empty dict when nothing was found."""
        facts: dict[str, Any] = {}
        name = self.cfg.name
        client = self._http.http  # the chat's connection, kept alive for the request after

        async def get(method: str, url: str, body: Any = None) -> Any:
            try:
                resp = await client.request(
                    method, url, json_body=body, timeout=self.probe_timeout_s
                )
                return resp.json() if resp.status_code == 200 else None
            except (http.HTTPError, ValueError):
                return None

        models = await get("GET", f"{self.url}/models")
        for m in (models or {}).get("data", []) if isinstance(models, dict) else []:
            if (
                isinstance(m, dict)
                and m.get("id") == name
                and isinstance(m.get("max_model_len"), int)
            ):
                facts.update(
                    context_window=m["max_model_len"],
                    context_source="/v1/models max_model_len",
                    server="vLLM",
                )
        if "context_window" not in facts:
            props = await get("GET", f"{self.root}/props")
            if isinstance(props, dict):
                facts.update(self._llama_cpp(props))
        if "context_window" not in facts:
            show = await get("POST", f"{self.root}/api/show", {"model": name})
            if isinstance(show, dict):
                facts.update(self._ollama(show))
        if "context_window" not in facts:
            lms = await get("GET", f"{self.root}/api/v0/models")
            for m in (lms or {}).get("data", []) if isinstance(lms, dict) else []:
                size = (
                    m.get("loaded_context_length") or m.get("max_context_length")
                    if isinstance(m, dict)
                    else None
                )
                if isinstance(m, dict) and m.get("id") == name and isinstance(size, int):
                    facts.update(
                        context_window=size,
                        context_source="LM Studio context length",
                        server="LM Studio",
                    )
        return facts

    @staticmethod
    def _llama_cpp(props: dict[str, Any]) -> dict[str, Any]:
        """llama.cpp's /props: the slot's context and whether the chat template renders tool
        definitions. A template that does not (`chat_template_caps.supports_tools` false)
        drops the request's `tools` from the prompt without an error: the model never sees
        them, so none are sent."""
        facts: dict[str, Any] = {}
        gen = props.get("default_generation_settings") or {}
        n_ctx = gen.get("n_ctx") if isinstance(gen, dict) else None
        n_ctx = n_ctx if isinstance(n_ctx, int) else props.get("n_ctx")
        if isinstance(n_ctx, int) and n_ctx > 0:
            facts.update(context_window=n_ctx, context_source="/props n_ctx")
        if "default_generation_settings" in props:
            build = props.get("build_info")
            facts["server"] = (
                f"llama.cpp {build}" if isinstance(build, str) and build else "llama.cpp"
            )
        caps = props.get("chat_template_caps")
        if isinstance(caps, dict) and isinstance(caps.get("supports_tools"), bool):
            facts["tools"] = caps["supports_tools"]
            if not caps["supports_tools"]:
                facts["tools_source"] = LLAMA_CPP_NO_TOOLS
        return facts

    @staticmethod
    def _ollama(show: dict[str, Any]) -> dict[str, Any]:
        facts: dict[str, Any] = {"ollama": True, "server": "Ollama"}
        num_ctx = None
        for line in str(show.get("parameters") or "").splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0] == "num_ctx" and parts[1].isdigit():
                num_ctx = int(parts[1])
        trained = next(
            (
                v
                for k, v in (show.get("model_info") or {}).items()
                if k.endswith(".context_length") and isinstance(v, int)
            ),
            None,
        )
        facts["trained_context"] = trained
        if num_ctx:
            facts.update(context_window=num_ctx, context_source="Ollama num_ctx")
        else:
            window = min(OLLAMA_DEFAULT_CTX, trained) if trained else OLLAMA_DEFAULT_CTX
            facts.update(
                context_window=window, context_source="Ollama default num_ctx (no num_ctx set)"
            )
        caps = show.get("capabilities")
        if isinstance(caps, list):
            facts["tools"] = "tools" in caps
            if not facts["tools"]:
                facts["tools_source"] = OLLAMA_NO_TOOLS
        return facts

    async def learn(self) -> Capabilities:
        """Fill `caps` from the server's own reports (once; the runtime saves them)."""
        facts = await self.server_facts()
        if facts.get("context_window"):  # the server's own number beats a remembered one
            self.caps.context_window = facts["context_window"]
            self.caps.context_source = facts["context_source"]
        self.take_tools(facts)
        return self.caps

    def take_tools(self, facts: dict[str, Any]) -> None:
        """What the server says about tools now beats what it said before (a restarted
        llama-server with another chat template); a refusal learned from a request stands."""
        said = facts.get("tools")
        if said is False:
            self.caps.tools, self.caps.tools_source = False, facts.get("tools_source")
        elif said is True and self.caps.tools is False and self.caps.tools_source in REPORTED:
            self.caps.tools, self.caps.tools_source = None, None

    async def probe(self) -> Probe:
        try:
            response = await self._http.open(
                "GET", "/models", retries=0, timeout_s=self.probe_timeout_s
            )
            try:
                page = json.loads(await response.aread())
            finally:
                await response.aclose()
            data = page.get("data") if isinstance(page, dict) else None
            if not isinstance(data, list):
                raise ValueError(f"not a model list: {str(page)[:200]}")
            models = sorted(str(m.get("id")) for m in data if isinstance(m, dict))
        except Exception as exc:  # noqa: BLE001 - a probe reports any failure (mapped by _map), never raises
            return Probe(
                url=self.url, ok=False, detail=str(self._map(exc, self.cfg.name, route="models"))
            )
        if self.cfg.name in models:
            detail = f"{len(models)} models; '{self.cfg.name}' available"
        else:
            detail = f"{len(models)} models; configured model '{self.cfg.name}' is not among them"
        return Probe(url=self.url, ok=True, detail=detail, models=models)


__all__ = ["OpenAIClient", "to_openai_messages", "to_openai_tools"]
