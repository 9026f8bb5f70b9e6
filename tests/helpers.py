"""Test helpers: wait on conditions with a deadline instead of sleeping (or until the code
under test is in a given wait: :class:`RecordedWaits`); the environment of a process a test
starts; a settings value read from a fixture."""

from __future__ import annotations

import asyncio
import functools
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx

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


@functools.cache
def loopback() -> httpx.Client:
    """One client for a test process's polls of the servers it started (``/readyz`` until a
    process is up, ...): ``httpx.get`` makes a client per call, and with it a TLS context that
    loads the CA bundle, ~30 ms of CPU per poll, most of a core while a poll loop waits. No
    connection is kept: each poll reaches the process as it is now (restarted, killed)."""
    return httpx.Client(limits=httpx.Limits(max_keepalive_connections=0))


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


class RecordedWaits:
    """The ``wait_any`` calls a module under test makes, recorded (their timeouts) as they
    start: a test waits until the code is in a given wait — a barrier — instead of sleeping and
    then asserting that nothing happened meanwhile."""

    def __init__(self, monkeypatch: Any, module: Any) -> None:
        self.timeouts: list[float | None] = []
        original = module.wait_any

        async def recording(*awaitables: Awaitable[object], timeout: float | None) -> None:  # noqa: ASYNC109
            self.timeouts.append(timeout)
            await original(*awaitables, timeout=timeout)

        monkeypatch.setattr(module, "wait_any", recording)

    async def until_one(self, seconds: float | None = None) -> None:
        """Until the code under test has started a wait of ``seconds`` (None: any wait)."""

        async def started() -> bool:
            return bool(self.timeouts) if seconds is None else seconds in self.timeouts

        await wait_for(started, timeout=10.0, interval=0.005, message=f"a wait of {seconds}s")
