"""The fake model in its own process (its threads never share the timing client's GIL),
and a raw HTTP streaming client: the floor a turn is compared with."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from typing import Any

import httpx

from tests.bench.common import REPO


class FakeProc:
    """`python -m tests.fakes.fake_model` as a subprocess; steps pushed over HTTP."""

    def __init__(self, default_text: str = "done", args: tuple[str, ...] = ()) -> None:
        self.default_text = default_text
        self.args = args  # more `python -m tests.fakes.fake_model` flags (--props, --n-ctx N)
        self.proc: subprocess.Popen | None = None
        self.url = ""

    def __enter__(self) -> FakeProc:
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.bench.fake_server",
                "--default-text",
                self.default_text,
                *self.args,
            ],
            cwd=str(REPO),
            stdout=subprocess.PIPE,
            text=True,
        )
        line = self.proc.stdout.readline()  # type: ignore[union-attr]
        if not line.startswith("READY "):
            self.__exit__()
            raise RuntimeError(f"the fake model did not start: {line!r}")
        self.url = line.split()[1]
        self._http = httpx.Client(timeout=10)  # one client: building one costs an SSL context
        return self

    def __exit__(self, *exc: Any) -> None:
        http = getattr(self, "_http", None)
        if http is not None:
            http.close()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def last_chat_body(self, back: int = 0) -> dict[str, Any]:
        """The body of the last chat request the fake received (ndomo's own, after its turn),
        or of the one `back` requests before it."""
        r = self._http.get(self.url.replace("/v1", "") + "/_fake/requests")
        r.raise_for_status()
        chats = [x for x in r.json() if x["path"].endswith("/chat/completions")]
        if len(chats) <= back or not isinstance(chats[-1 - back].get("body"), dict):
            raise RuntimeError("the fake recorded no such chat request body")
        return chats[-1 - back]["body"]

    def push(self, *steps: dict) -> None:
        r = self._http.post(self.url.replace("/v1", "") + "/_fake/steps", json=list(steps))
        r.raise_for_status()


class RawStream:
    """A plain streamed chat request with httpx: time to the first content chunk and to the end."""

    def __init__(self, url: str) -> None:
        self.client = httpx.AsyncClient(base_url=url, timeout=60)

    async def aclose(self) -> None:
        await self.client.aclose()

    async def once(
        self, prompt: str = "hi", body: dict[str, Any] | None = None
    ) -> tuple[float, float, str]:
        """`body`: a whole request to send as it is (ndomo's own, for a fair floor);
        otherwise a one-message request with `prompt`."""
        if body is None:
            body = {
                "model": "fake-model",
                "stream": True,
                "messages": [{"role": "user", "content": prompt}],
            }
        t = time.perf_counter()
        first = None
        text = []
        async with self.client.stream("POST", "/chat/completions", json=body) as resp:
            resp.raise_for_status()
            async for line in resp.aiter_lines():
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                chunk = json.loads(line[6:])
                for choice in chunk.get("choices") or []:
                    piece = (choice.get("delta") or {}).get("content")
                    if piece:
                        if first is None:
                            first = time.perf_counter() - t
                        text.append(piece)
        total = time.perf_counter() - t
        if first is None:
            raise RuntimeError("the raw stream carried no text")
        return first, total, "".join(text)
