"""Retry timing: jittered exponential backoff that honours Retry-After.

Retries are ours, not the SDK's, so tests can shrink the delays and the
decision of what is worth retrying lives in one place.
"""

from __future__ import annotations

import random
import time
from email.utils import parsedate_to_datetime
from typing import Callable, Mapping

from pydantic import BaseModel, ConfigDict, Field


class RetryPolicy(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_retries: int = Field(default=2, ge=0)
    base_delay: float = Field(default=0.5, ge=0)
    max_delay: float = Field(default=20.0, ge=0)
    # A server asking for a longer wait is reported to the user instead of silently waited out.
    max_retry_after: float = Field(default=60.0, ge=0)

    def delay(
        self, attempt: int, retry_after: float | None = None, rng: Callable[[], float] = random.random
    ) -> float | None:
        """Seconds to sleep before retry number `attempt + 1`, or None to give up now."""
        if attempt >= self.max_retries:
            return None
        if retry_after is not None:
            if retry_after > self.max_retry_after:
                return None
            return max(0.0, retry_after)
        ceiling = min(self.max_delay, self.base_delay * (2**attempt))
        return ceiling * (0.5 + rng() / 2)  # "equal jitter": never zero, never in lock-step


def parse_retry_after(headers: Mapping[str, str] | None, now: float | None = None) -> float | None:
    """Seconds asked for by `retry-after-ms` or `retry-after` (seconds or HTTP date)."""
    if not headers:
        return None
    lowered = {k.lower(): v for k, v in headers.items()}
    ms = lowered.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))
