"""Fixtures shared by the unit tests: a scripted model server and an App on a tmp workspace."""

from __future__ import annotations

import subprocess
import threading

import pytest

from ndomo.app import App
from tests.fakes.fake_model import FakeModel


@pytest.fixture
def popen_threads(monkeypatch) -> list[threading.Thread]:
    """The thread each `subprocess.Popen` is made on (a process started on the event
    loop's thread holds the loop for its fork and exec)."""
    threads: list[threading.Thread] = []
    real = subprocess.Popen.__init__

    def spy(self, *args, **kw):
        threads.append(threading.current_thread())
        real(self, *args, **kw)

    monkeypatch.setattr(subprocess.Popen, "__init__", spy)
    return threads


@pytest.fixture
def fake():
    with FakeModel(default_text="done") as fm:
        yield fm


@pytest.fixture
async def app(tmp_path, fake):
    a = App(tmp_path)
    a.settings.model.base_url = fake.url
    a.settings.model.max_retries = 0
    yield a
    await a.aclose()
