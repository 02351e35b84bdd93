"""What a health check of a model server says, shared by the clients and `ndomo health`."""

from __future__ import annotations

from pydantic import Field

from ndomo.schema import Schema


class Probe(Schema):
    """Result of a health check: never an exception, so `ndomo health` can always report."""

    url: str
    ok: bool
    detail: str
    models: list[str] = Field(default_factory=list)
