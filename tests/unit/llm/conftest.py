from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from typing import Any

import pytest

from ndomo.config import ModelConfig
from ndomo.llm.messages import Message, StreamEvent, ToolSpec
from ndomo.llm.openai_client import OpenAIClient
from tests.fakes.fake_model import FakeModel


@pytest.fixture
def fake() -> Any:
    with FakeModel(models=["fake-model", "other"]) as f:
        yield f


@pytest.fixture
async def clients() -> AsyncIterator[Any]:
    """Factory for clients; closes them after the test. Retries are the transport's (the SDK's policy): scripts that
    want a quick retry send `retry-after-ms`."""
    made: list[OpenAIClient] = []

    def make(url: str, **cfg: Any) -> OpenAIClient:
        env = cfg.pop("env", {})
        cfg.setdefault("name", "fake-model")
        client = OpenAIClient(ModelConfig(base_url=url, **cfg), env=env)
        made.append(client)
        return client

    yield make
    for c in made:
        await c.aclose()


@pytest.fixture
def closed_port_url() -> str:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return f"http://127.0.0.1:{port}/v1"


READ = ToolSpec(
    name="read",
    description="Read a file",
    parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)


async def collect(
    client: Any, prompt: str = "hi", tools: list[ToolSpec] | None = None, **kw: Any
) -> list[StreamEvent]:
    return [e async for e in client.stream([Message.user(prompt)], tools or [], **kw)]
