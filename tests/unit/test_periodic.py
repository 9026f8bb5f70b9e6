"""The periodic runner (``shortlist.queue.periodic``): jobs run when due, a slow one holds back
nobody, a failing one runs again, and a stop ends the wait at once."""

from __future__ import annotations

import asyncio

import pytest

from shortlist.queue import periodic
from shortlist.queue.periodic import Periodic, run_periodic
from tests.helpers import RecordedWaits, wait_for


async def test_jobs_run_when_due_and_a_slow_or_failing_one_holds_back_nobody() -> None:
    runs: dict[str, int] = {"fast": 0, "slow": 0, "failing": 0}
    slow_started, release = asyncio.Event(), asyncio.Event()

    async def fast() -> None:
        runs["fast"] += 1

    async def slow() -> None:
        runs["slow"] += 1
        slow_started.set()
        await release.wait()

    async def failing() -> None:
        runs["failing"] += 1
        raise RuntimeError("boom")

    stop = asyncio.Event()
    task = asyncio.create_task(
        run_periodic(
            [
                Periodic("fast", 0.01, fast),
                Periodic("slow", 0.01, slow),
                Periodic("failing", 0.01, failing),
                Periodic("off", 0, fast),
            ],
            stop,
        )
    )
    await slow_started.wait()
    await wait_for(
        lambda: asyncio.sleep(0, result=runs["fast"] >= 5 and runs["failing"] >= 5),
        timeout=10,
        interval=0.005,
    )
    assert runs["slow"] == 1  # never twice at once
    release.set()
    await wait_for(lambda: asyncio.sleep(0, result=runs["slow"] >= 2), timeout=10, interval=0.005)
    stop.set()
    async with asyncio.timeout(1):
        await task


async def test_the_first_run_waits_first_after_and_a_stop_ends_the_wait(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    waits = RecordedWaits(monkeypatch, periodic)
    runs: list[float] = []

    async def job() -> None:
        runs.append(asyncio.get_running_loop().time())

    stop = asyncio.Event()
    task = asyncio.create_task(run_periodic([Periodic("later", 3600, job, first_after=3600)], stop))
    await waits.until_one()  # the runner is in its wait, due in an hour ...
    first = waits.timeouts[0]
    assert runs == [] and first is not None and first > 3500  # ... and ran nothing
    stop.set()
    async with asyncio.timeout(1):
        await task
    assert runs == []
