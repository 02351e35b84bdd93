"""Fixtures shared by the unit tests: a scripted model server and an App on a tmp workspace."""

from __future__ import annotations

import pytest

from ndomo.app import App
from tests.fakes.fake_model import FakeModel


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
