"""The fake server itself: script semantics, non-streaming replies, process mode."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from tests.fakes.fake_model import FakeModel, load_script

ROOT = Path(__file__).resolve().parents[3]


def post(url: str, body: Any) -> Any:
    req = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read())


def chat(url: str, prompt: str, **extra: Any) -> Any:
    return post(
        url + "/chat/completions",
        {"model": "m", "messages": [{"role": "user", "content": prompt}], **extra},
    )


def test_match_steps_wait_for_their_prompt() -> None:
    with FakeModel(
        [{"match": "tests", "text": "ran tests"}, {"text": "first"}, {"text": "second"}]
    ) as fake:
        assert chat(fake.url, "hello")["choices"][0]["message"]["content"] == "first"
        assert (
            chat(fake.url, "please run the tests")["choices"][0]["message"]["content"]
            == "ran tests"
        )
        assert chat(fake.url, "again")["choices"][0]["message"]["content"] == "second"
        assert chat(fake.url, "more")["choices"][0]["message"]["content"] == "done"
        assert [r["body"]["messages"][0]["content"] for r in fake.chat_requests()] == [
            "hello",
            "please run the tests",
            "again",
            "more",
        ]


def test_non_streaming_tool_calls_and_errors() -> None:
    with FakeModel(
        [{"tool_calls": [{"name": "ls", "arguments": {"dir": "."}}]}, {"status": 503}],
        default_text="bye",
    ) as fake:
        choice = chat(fake.url, "x")["choices"][0]
        assert choice["finish_reason"] == "tool_calls"
        assert json.loads(choice["message"]["tool_calls"][0]["function"]["arguments"]) == {
            "dir": "."
        }
        with pytest.raises(urllib.error.HTTPError) as info:
            chat(fake.url, "y")
        assert info.value.code == 503
        info.value.close()
        assert chat(fake.url, "z")["choices"][0]["message"]["content"] == "bye"


def test_bad_steps_are_rejected_clearly() -> None:
    with pytest.raises(ValidationError):
        load_script([{"txt": "typo"}])
    with pytest.raises(ValueError, match="list of steps"):
        load_script("nope")
    steps, default = load_script({"steps": [{"text": "a"}], "default_text": "fin"})
    assert steps[0].text == "a" and default == "fin"


def test_runs_as_a_process_with_record_and_push(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "from file"}]))
    record = tmp_path / "requests.jsonl"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.fakes.fake_model",
            "--script",
            str(script),
            "--record",
            str(record),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline().strip()  # type: ignore[union-attr]
        assert line.startswith("READY http://127.0.0.1:") and line.endswith("/v1")
        url = line.split()[1]
        assert chat(url, "one")["choices"][0]["message"]["content"] == "from file"
        assert post(url.removesuffix("/v1") + "/_fake/steps", [{"text": "pushed"}]) == {
            "remaining": 1
        }
        assert chat(url, "two")["choices"][0]["message"]["content"] == "pushed"
    finally:
        proc.terminate()
        assert proc.wait(timeout=10) == 0
        proc.stdout.close()  # type: ignore[union-attr]
    lines = [json.loads(x) for x in record.read_text().splitlines()]
    assert [x["body"]["messages"][0]["content"] for x in lines] == ["one", "two"]
    assert lines[0]["method"] == "POST" and lines[0]["path"] == "/v1/chat/completions"
