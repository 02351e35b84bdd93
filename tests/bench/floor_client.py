"""The floors `ndomo run`'s start-up is reported against (`tests.bench.run_start`): a fresh
Python process that sends ndomo's own chat request body and prints the streamed answer.

    python tests/bench/floor_client.py libraries BODY URL FOLDER
    python tests/bench/floor_client.py stdlib BODY URL FOLDER
    python tests/bench/floor_client.py everything BODY URL FOLDER MODULES
    python tests/bench/floor_client.py no-pydantic BODY URL FOLDER MODULES

`libraries` does the least a run must with the libraries ndomo is built on: it loads
asyncio, logging, sqlite3, PyYAML, pydantic and h11, validates a YAML config with one
pydantic model, writes one row to a SQLite file in FOLDER, and streams the request with h11
over an asyncio connection (plain http, as the bench's server; ndomo's model client is
asyncio and h11 since Stop 41, httpx before). `stdlib` sends the same body with `urllib.request`
and nothing else — the held-out pairing's baseline. `everything` first imports, in order
and with the collector held as ndomo holds it (`ndomo.startup`), every module named in the
file MODULES — the libraries (standard and third-party) a real `ndomo run` had loaded,
ndomo's own modules left out — then does what `libraries` does: the least any run built
on ndomo's whole set of libraries could cost. `no-pydantic` is `everything` without
pydantic: the caller leaves pydantic's own modules out of MODULES, and the config is checked
by hand, not by a model — what a run whose request path defined no pydantic model could
cost at least (issue 31's option (c)). None imports ndomo; it runs as a file, not a
module, so no package `__init__` is loaded before the timed imports.
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


def libraries(body: bytes, url: str, folder: str, *, models: bool = True) -> None:
    import asyncio
    import logging
    import sqlite3
    from urllib.parse import urlsplit

    import h11
    import yaml

    logging.basicConfig(level=logging.WARNING)
    config = yaml.safe_load(f"base_url: {url}\nname: floor\n")
    if models:
        from pydantic import BaseModel

        class Model(BaseModel):
            base_url: str
            name: str = "default"
            timeout_s: float = 600.0

        Model.model_validate(config)
    elif not isinstance(config.get("base_url"), str) or not isinstance(config.get("name"), str):
        raise SystemExit("config: base_url and name must be text")
    db = sqlite3.connect(f"{folder}/floor.db")
    with db:
        db.execute("create table if not exists turns (id integer primary key, prompt text)")
        db.execute("insert into turns (prompt) values (?)", ("say hi",))
    db.close()

    async def send() -> None:
        parts = urlsplit(url)
        reader, writer = await asyncio.open_connection(parts.hostname, parts.port or 80)
        conn = h11.Connection(h11.CLIENT)
        head = [
            ("host", parts.netloc),
            ("content-type", "application/json"),
            ("content-length", str(len(body))),
        ]
        request = h11.Request(method="POST", target=parts.path + "/chat/completions", headers=head)
        writer.write(
            conn.send(request) + conn.send(h11.Data(data=body)) + conn.send(h11.EndOfMessage())
        )
        pending = b""
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(await reader.read(65536))
            elif isinstance(event, h11.Response) and event.status_code != 200:
                raise SystemExit(f"status {event.status_code}")
            elif isinstance(event, h11.Data):
                *lines, pending = (pending + bytes(event.data)).split(b"\n")
                for line in lines:
                    sys.stdout.write(_text(line.rstrip(b"\r")))
                    sys.stdout.flush()
            elif isinstance(event, (h11.EndOfMessage, h11.ConnectionClosed)):
                break
        sys.stdout.write(_text(pending))
        writer.close()

    asyncio.run(send())


def everything(modules_file: str) -> None:
    """Import the listed modules (one a line), as a process that has ndomo's libraries."""
    import contextlib
    import gc

    gc.disable()
    with open(modules_file) as f:
        for name in f.read().split():
            # another platform's module (msvcrt …): ndomo's libraries tried it too
            with contextlib.suppress(ImportError):
                __import__(name)  # the import statement's path: `-X importtime` lists it


if __name__ == "__main__":
    kind, body_file, base_url, workdir = sys.argv[1:5]
    if kind not in ("libraries", "stdlib", "everything", "no-pydantic"):
        raise SystemExit(f"unknown floor {kind!r}: libraries, stdlib, everything or no-pydantic")
    if kind in ("everything", "no-pydantic"):
        everything(sys.argv[5])
    if kind == "no-pydantic" and "pydantic" in sys.modules:  # a listed module brought it
        raise SystemExit("no-pydantic: a module in the list imported pydantic")
    with open(body_file, "rb") as f:
        payload = f.read()
    if kind == "stdlib":
        stdlib(payload, base_url)
    else:
        libraries(payload, base_url, workdir, models=kind != "no-pydantic")
