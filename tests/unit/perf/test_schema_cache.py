"""Tool schemas kept between processes: a second process offers the same schemas without
building them, a corrupt file is rebuilt, and a model outside ndomo is keyed by its file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from ndomo.runtime import schema_cache

SPECS = textwrap.dedent(
    """
    import json
    from pydantic import BaseModel
    built = []
    real = BaseModel.model_json_schema.__func__
    def counting(cls, *a, **kw):
        built.append(cls.__name__)
        return real(cls, *a, **kw)
    BaseModel.model_json_schema = classmethod(counting)
    from ndomo import compose
    from ndomo.runtime.tools import tool_specs
    specs = tool_specs(compose.plugins().tools.all())
    print(json.dumps({"built": len(built), "specs": [[s.name, s.parameters] for s in specs]}))
    """
)


def _specs(cache: Path) -> dict:
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    out = subprocess.run(
        [sys.executable, "-c", SPECS], env=env, capture_output=True, text=True, check=True
    ).stdout
    return json.loads(out)


def test_a_second_process_offers_the_same_schemas_without_building_them(tmp_path):
    first = _specs(tmp_path)
    assert first["built"] >= 20  # every tool's parameters, built once
    (saved,) = (tmp_path / "ndomo").glob("tool-schemas-*.json")
    second = _specs(tmp_path)
    assert second["built"] == 0
    assert second["specs"] == first["specs"]
    # A torn or foreign file is not trusted: it is rebuilt, and the answer is the same.
    saved.write_text("{not json")
    third = _specs(tmp_path)
    assert third["built"] == first["built"] and third["specs"] == first["specs"]
    assert json.loads(saved.read_text())  # and saved whole again


def test_a_model_outside_ndomo_is_keyed_by_its_own_file(tmp_path, monkeypatch):
    mod = tmp_path / "thirdparty_tool.py"
    mod.write_text("from pydantic import BaseModel\nclass P(BaseModel):\n    x: int\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import thirdparty_tool

    key = schema_cache._key(thirdparty_tool.P)
    assert key.startswith("thirdparty_tool:P:") and str(mod) in key
    mod.write_text("from pydantic import BaseModel\nclass P(BaseModel):\n    x: int\n    y: str\n")
    assert schema_cache._key(thirdparty_tool.P) != key  # an edit is a new entry
    monkeypatch.delitem(sys.modules, "thirdparty_tool")
