"""What a model endpoint can do, learned once and remembered per endpoint + model.

A client fills these in as it finds out (a stream that comes back empty, a "does not
support tools" error, a context window the server reports); the runtime saves them in
the store, so the next process does not pay for the same failed request again.
"""

from __future__ import annotations

from pydantic import ConfigDict

from ndomo.schema import Schema

DEFAULT_BYTES_PER_TOKEN = (
    3.0  # conservative for JSON-heavy requests; calibrated by usage.prompt_tokens
)


class Capabilities(Schema):
    model_config = ConfigDict(validate_assignment=True)

    stream_tools: bool | None = None  # None: not tried yet
    tools: bool | None = None
    tools_source: str | None = None  # why tools is False: the server's report, or its error
    context_window: int | None = None  # tokens, as the server reported it
    context_source: str | None = None  # where the window came from ("/props n_ctx", "error", …)
    bytes_per_token: float | None = None  # request bytes / usage.prompt_tokens, last seen
    learned_at: float | None = None  # when the server was last asked (epoch s); None: ask again

    def describe(self) -> str:
        def yn(v: bool | None) -> str:
            return "unknown" if v is None else ("yes" if v else "no")

        window = (
            f"{self.context_window} tokens ({self.context_source})"
            if self.context_window
            else "unknown"
        )
        tools = yn(self.tools)
        if self.tools is False and self.tools_source:
            tools = f"no ({self.tools_source})"
        return f"streams tool calls: {yn(self.stream_tools)}; tools: {tools}; context: {window}"


def estimate_tokens(size_bytes: int, bytes_per_token: float | None = None) -> int:
    """Tokens for a request of `size_bytes` of JSON: no tokenizer works offline, so bytes
    divided by a ratio the server's own `usage.prompt_tokens` keeps honest."""
    ratio = bytes_per_token or DEFAULT_BYTES_PER_TOKEN
    return int(size_bytes / ratio) + 1
