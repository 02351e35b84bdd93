"""A model request goes out over ndomo's own HTTP (llm/http.py): the OpenAI SDK (0.4 s of imports, ~3.6 ms
more to the first chunk, docs/performance.md) is never imported, and the body is ndomo's
own JSON, sent as built."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from tests.fakes.fake_model import FakeModel


def test_a_streamed_turn_imports_no_model_sdk_and_sends_the_body_as_built():
    script = [
        {"text": "one two three four", "chunks": 4},
        {"tool_calls": [{"name": "read", "arguments": {"path": "a.py"}}]},
    ]
    with FakeModel(script) as fake:
        code = textwrap.dedent(
            f"""
            import asyncio, json, sys
            from ndomo.config import ModelConfig
            from ndomo.llm import Message, TextChunk, ToolCallReady, ToolSpec
            from ndomo.llm.openai_client import OpenAIClient

            READ = ToolSpec(name="read", description="Read a file", parameters={{
                "type": "object", "properties": {{"path": {{"type": "string"}}}}}})

            async def main():
                client = OpenAIClient(ModelConfig(base_url={fake.url!r}, name="fake-model"))
                try:
                    history = [Message.user("hi"), Message(role="assistant", content="yes"),
                               Message.user("again")]
                    first = [e async for e in client.stream(history, [READ], temperature=0.2)]
                    second = [e async for e in client.stream([Message.user("read it")], [READ])]
                finally:
                    await client.aclose()
                text = "".join(e.text for e in first if isinstance(e, TextChunk))
                calls = [(e.call.name, e.call.arguments) for e in second
                         if isinstance(e, ToolCallReady)]
                sdks = [m for m in ("openai", "httpx2", "anthropic") if m in sys.modules]
                print(json.dumps({{"text": text, "calls": calls, "sdks": sdks}}))

            asyncio.run(main())
            """
        )
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
        ).stdout
        first, _ = fake.chat_requests()
    seen = json.loads(out)
    assert seen["text"] == "one two three four"
    assert seen["calls"] == [["read", {"path": "a.py"}]]
    assert seen["sdks"] == []
    body = first["body"]
    assert [m["content"] for m in body["messages"]] == ["hi", "yes", "again"]
    assert body["tools"][0]["function"]["name"] == "read" and body["tool_choice"] == "auto"
    assert body["stream"] is True and body["temperature"] == 0.2 and body["model"] == "fake-model"
