"""Test helpers: wait on conditions with a deadline instead of sleeping; the environment of a
process a test starts; a settings value read from a fixture."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")

HARNESS_SETTINGS = frozenset({"SHORTLIST_CACHE_DIR"})
"""Settings tests/conftest.py gives every process of a test run (a cache, nothing a test is
about)."""


@dataclass(frozen=True)
class FromFixture:
    """A settings value another fixture of the test gives (a fake server's address):
    ``FromFixture("boards", lambda boards: boards.base_url)``."""

    fixture: str
    read: Callable[[Any], Any]


def environ_without_settings() -> dict[str, str]:
    """This process's environment without the caller's ``SHORTLIST_*`` settings (a developer's
    shell must not change what a test starts), except those of :data:`HARNESS_SETTINGS`."""
    return {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("SHORTLIST_") or k in HARNESS_SETTINGS
    }


async def wait_for(
    predicate: Callable[[], Awaitable[T]],
    *,
    timeout: float = 30.0,  # noqa: ASYNC109 (a deadline for polling, not an I/O timeout)
    interval: float = 0.05,
    message: str = "condition",
) -> T:
    """Poll ``predicate`` until it returns a truthy value; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = await predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {message}")
        await asyncio.sleep(interval)


def wait_for_sync(
    predicate: Callable[[], T],
    *,
    timeout: float = 30.0,
    interval: float = 0.05,
    message: str = "condition",
) -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {message}")
        time.sleep(interval)
