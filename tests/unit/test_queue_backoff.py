"""The queue worker's back-off schedule."""

from __future__ import annotations

import pytest

from shortlist.queue import (
    backoff_delay,
)


def test_backoff_schedule_is_the_seeds() -> None:
    assert [backoff_delay(a, 30, 120) for a in range(5)] == [30, 60, 120, 120, 120]
    assert backoff_delay(1000, 30, 120) == 120
    with pytest.raises(ValueError):
        backoff_delay(-1, 30, 120)
