"""The floors `ndomo run`'s start-up is reported against (`tests.bench.run_start`): a fresh
Python process that sends ndomo's own chat request body and prints the streamed answer.

    python tests/bench/floor_client.py libraries BODY URL FOLDER
    python tests/bench/floor_client.py stdlib BODY URL FOLDER

`libraries` does the least a run must with the libraries ndomo is built on: it loads
asyncio, logging, sqlite3, PyYAML, pydantic and httpx, validates a YAML config with one
pydantic model, writes one row to a SQLite file in FOLDER, and streams the request with
an `httpx.AsyncClient` (for a plain-http server without loading CAs, and without httpx's
command-line client, as ndomo does). `stdlib` sends the same body with `urllib.request`
and nothing else — the held-out pairing's baseline. Neither imports ndomo; it runs as a
file, not a module, so no package `__init__` is loaded before the timed imports.
"""

from __future__ import annotations

import json
import sys


def _text(line: bytes) -> str:
    """The content of one SSE line of a chat stream."""
    if not line.startswith(b"data: ") or line.strip() == b"data: [DONE]":
        return ""
    return "".join(
        (c.get("delta") or {}).get("content") or ""
        for c in json.loads(line[6:]).get("choices") or []
    )


def stdlib(body: bytes, url: str) -> None:
    import urllib.request

    request = urllib.request.Request(
        url + "/chat/completions", data=body, headers={"content-type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        for line in response:
            sys.stdout.write(_text(line))
            sys.stdout.flush()


def libraries(body: bytes, url: str, folder: str) -> None:
    import asyncio
    import logging
    import sqlite3
    import ssl

    # as ndomo's package does: httpx's command-line client (click, pygments, rich, present
    # here with the test dependencies) stays unloaded
    sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
    import httpx
    import yaml
    from pydantic import BaseModel

    class Model(BaseModel):
        base_url: str
        name: str = "default"
        timeout_s: float = 600.0

    logging.basicConfig(level=logging.WARNING)
    Model.model_validate(yaml.safe_load(f"base_url: {url}\nname: floor\n"))
    db = sqlite3.connect(f"{folder}/floor.db")
    with db:
        db.execute("create table if not exists turns (id integer primary key, prompt text)")
        db.execute("insert into turns (prompt) values (?)", ("say hi",))
    db.close()

    async def send() -> None:
        tls = True if url.startswith("https:") else ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        async with (
            httpx.AsyncClient(verify=tls, timeout=60) as http,
            http.stream(
                "POST",
                url + "/chat/completions",
                content=body,
                headers={"content-type": "application/json"},
            ) as response,
        ):
            response.raise_for_status()
            async for line in response.aiter_lines():
                sys.stdout.write(_text(line.encode()))
                sys.stdout.flush()

    asyncio.run(send())


if __name__ == "__main__":
    kind, body_file, base_url, workdir = sys.argv[1:5]
    if kind not in ("libraries", "stdlib"):
        raise SystemExit(f"unknown floor {kind!r}: libraries or stdlib")
    with open(body_file, "rb") as f:
        payload = f.read()
    if kind == "stdlib":
        stdlib(payload, base_url)
    else:
        libraries(payload, base_url, workdir)
