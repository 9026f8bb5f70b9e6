"""When a failed delivery is tried again, and when an endpoint is given up on.

The schedule is Standard Webhooks' example (spec/standard-webhooks.md, "Deliverability and
reliability"): immediately, then 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h and 24 h after each
failure — ten attempts over ~75.5 hours — each wait with random jitter (the spec: "to prevent
cases where the failures are due to recurring load caused by the webhook attempts themselves").
A ``Retry-After`` (429, 502, 504 and any other answer that carries one) lengthens the wait to at
least what it asks, up to :data:`MAX_RETRY_AFTER`. An endpoint whose attempts have all failed
for :data:`DISABLE_AFTER` is disabled, as one answering 410 Gone is at once.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from email.utils import parsedate_to_datetime

RETRY_SCHEDULE: tuple[float, ...] = (
    5,
    5 * 60,
    30 * 60,
    2 * 3600,
    5 * 3600,
    10 * 3600,
    14 * 3600,
    20 * 3600,
    24 * 3600,
)
"""Waits after the 1st, 2nd, … failed attempt; after the last one the delivery has failed."""
ATTEMPTS = len(RETRY_SCHEDULE) + 1
JITTER = 0.2
"""Each wait is drawn from ±20 % of the schedule's figure."""
MAX_RETRY_AFTER = 24 * 3600.0
"""The longest Retry-After honoured (an endpoint cannot park a delivery for a year)."""
DISABLE_AFTER = 5 * 24 * 3600.0
"""An endpoint whose every attempt failed for this long (5 days) is disabled."""
ROTATION_OVERLAP = 24 * 3600.0
"""How long the secret before a rotation still signs (beside the new one)."""
THROTTLING = frozenset({429, 502, 504})
"""Answers that say the endpoint is under load: its Retry-After holds back every delivery to it,
not only this one (the spec: "it's recommended to throttle the requests")."""


def retry_delay(
    failed_attempts: int, rng: random.Random, retry_after: float | None = None
) -> float:
    """Seconds until the next attempt after ``failed_attempts`` attempts have failed (≥ 1)."""
    base = RETRY_SCHEDULE[min(failed_attempts, len(RETRY_SCHEDULE)) - 1]
    delay = base * rng.uniform(1 - JITTER, 1 + JITTER)
    if retry_after is not None:
        delay = max(delay, min(retry_after, MAX_RETRY_AFTER))
    return delay


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """``Retry-After`` as seconds from now: delay-seconds or an HTTP-date (RFC 9110 10.2.3)."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        at = parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, at - (time.time() if now is None else now))


@dataclass
class Clock:
    """How far the sender's clock runs ahead of the database's, in seconds: 0 in production
    (every time is the database's ``now()``); a test moves it on instead of waiting."""

    ahead: float = 0.0

    def advance(self, seconds: float) -> None:
        self.ahead += seconds
