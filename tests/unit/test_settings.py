"""Settings that cannot work are refused before anything starts, naming the variables."""

from __future__ import annotations

import pytest

from shortlist.config import load_settings
from shortlist.errors import ConfigError


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        ({"stale_after": 30, "lease_seconds": 30}, ("STALE_AFTER", "LEASE_SECONDS")),
        ({"heartbeat_interval": 20, "lease_seconds": 30}, ("HEARTBEAT_INTERVAL", "LEASE_SECONDS")),
        ({"reaper_interval": 700, "stale_after": 600}, ("REAPER_INTERVAL", "STALE_AFTER")),
        (
            {"indexer_backoff_max": 10, "indexer_backoff_base": 30},
            ("INDEXER_BACKOFF_MAX", "INDEXER_BACKOFF_BASE"),
        ),
        ({"db_pool_max": 1, "db_pool_min": 2}, ("DB_POOL_MAX", "DB_POOL_MIN")),
        ({"lease_seconds": 0}, ("LEASE_SECONDS",)),
        ({"indexer_poll_interval": -1}, ("INDEXER_POLL_INTERVAL",)),
        ({"backfill_concurrency": 0}, ("BACKFILL_CONCURRENCY",)),
        ({"port": 70000}, ("PORT",)),
        ({"duplicate_distance": -0.01}, ("DUPLICATE_DISTANCE",)),
        ({"log_level": "chatty"}, ("LOG_LEVEL",)),
    ],
)
def test_settings_that_cannot_work_are_refused_naming_the_variables(
    overrides: dict[str, object], named: tuple[str, ...]
) -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings(**overrides)
    message = str(caught.value)
    assert "\n" not in message
    for name in named:
        assert f"SHORTLIST_{name}" in message, message


def test_the_defaults_are_consistent() -> None:
    settings = load_settings()
    assert settings.heartbeat_interval * 2 <= settings.lease_seconds < settings.stale_after
