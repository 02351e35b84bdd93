"""The Python floors `ndomo run` is reported against (`tests/bench/floor_client.py`) send the
body they are given, byte for byte, to the model server and print its streamed answer; the
libraries floors write their SQLite row, `everything` after importing the modules it is
given; `no-pydantic` as `everything`, without loading pydantic; none loads ndomo. A floor
that skipped the request or sent a smaller one would make the comparison meaningless."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest

from tests.bench.fake_proc import FakeProc
from tests.bench.floor_client import __file__ as FLOOR
from tests.bench.run_start import without_pydantic


@pytest.mark.parametrize("kind", ["libraries", "stdlib", "everything", "no-pydantic"])
def test_a_floor_sends_the_body_it_is_given_and_prints_the_answer(tmp_path: Path, kind: str):
    body = {
        "model": "m",
        "stream": True,
        "messages": [{"role": "user", "content": "say hi · ünïcode"}],
        "tools": [{"type": "function", "function": {"name": "read", "parameters": {}}}],
    }
    body_file = tmp_path / "body.json"
    body_file.write_text(json.dumps(body))
    modules = tmp_path / "modules.txt"  # `everything`'s list: another platform's module too
    modules.write_text("shlex\nmsvcrt\ncolorsys\n")
    extra = [str(modules)] if kind in ("everything", "no-pydantic") else []
    with FakeProc() as fake:
        fake.push({"text": "a short answer", "chunks": 3})
        # -X importtime lists every module the floor loads, on stderr
        done = subprocess.run(
            [
                sys.executable,
                "-X",
                "importtime",
                FLOOR,
                kind,
                str(body_file),
                fake.url,
                str(tmp_path),
                *extra,
            ],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tmp_path,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout == "a short answer"
        assert fake.last_chat_body() == body
    loaded = [line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()]
    assert "ndomo" not in loaded and not any(m.startswith("ndomo.") for m in loaded)
    if kind != "stdlib":
        assert {"h11", "yaml", "sqlite3"} <= set(loaded)
        assert ("pydantic" in loaded) == (kind != "no-pydantic")
        assert ("colorsys" in loaded) == (kind in ("everything", "no-pydantic"))
        assert "httpx" not in loaded  # not on a run's path since Stop 41
        with closing(sqlite3.connect(tmp_path / "floor.db")) as db:
            assert db.execute("select prompt from turns").fetchall() == [("say hi",)]
    else:
        assert not {"httpx", "pydantic", "yaml"} & set(loaded)


def test_the_no_pydantic_floor_refuses_a_list_that_brings_pydantic(tmp_path: Path):
    modules = tmp_path / "modules.txt"
    modules.write_text("shlex\npydantic.main\n")
    done = subprocess.run(
        [
            sys.executable,
            FLOOR,
            "no-pydantic",
            "b",
            "http://127.0.0.1:9/v1",
            str(tmp_path),
            str(modules),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert "a module in the list imported pydantic" in done.stderr


def test_an_unknown_floor_is_refused(tmp_path: Path):
    done = subprocess.run(
        [sys.executable, FLOOR, "java", "b", "http://127.0.0.1:9/v1", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert "unknown floor 'java'" in done.stderr


def test_the_no_pydantic_list_leaves_out_pydantic_and_what_only_it_brings():
    imported = ["asyncio", "pydantic", "pydantic.main", "pydantic_core._pydantic_core"]
    imported += ["annotated_types", "typing_inspection.introspection", "typing_extensions", "h11"]
    assert without_pydantic(imported) == ["asyncio", "typing_extensions", "h11"]
