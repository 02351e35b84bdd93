"""What a model endpoint can do, remembered per endpoint + model (schema v14), so a
process does not pay again for a request an earlier one found out fails."""

from __future__ import annotations

import json
from typing import Any

from ndomo.store.base import StoreBase
from ndomo.store.db import now

V14_MODEL_CAPS = """
CREATE TABLE IF NOT EXISTS model_caps (
  endpoint TEXT NOT NULL,
  model TEXT NOT NULL,
  caps TEXT NOT NULL DEFAULT '{}',
  updated_at TEXT NOT NULL,
  PRIMARY KEY (endpoint, model)
);
"""


_SAVE_SQL = (
    "INSERT INTO model_caps(endpoint, model, caps, updated_at) VALUES (?, ?, ?, ?)"
    " ON CONFLICT(endpoint, model) DO UPDATE SET caps = excluded.caps,"
    " updated_at = excluded.updated_at"
)


class ModelCapsOps(StoreBase):
    async def model_caps(self, endpoint: str, model: str) -> dict[str, Any] | None:
        """The remembered capabilities (stream_tools, tools, context_window …) or None."""
        row = await self._one(
            "SELECT caps FROM model_caps WHERE endpoint = ? AND model = ?", (endpoint, model)
        )
        if row is None:
            return None
        try:
            value = json.loads(row["caps"])
        except ValueError:
            return None
        return value if isinstance(value, dict) else None

    async def save_model_caps(self, endpoint: str, model: str, caps: dict[str, Any]) -> None:
        args = (endpoint, model, json.dumps(caps, sort_keys=True), now())
        await self._write(lambda c: c.execute(_SAVE_SQL, args))
