"""The worker run loop on an in-memory queue (no database): every item handled once,
transient errors released and backed off, the throttle, stop and the grace period."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import psycopg
import pytest

from shortlist.errors import TransientError
from shortlist.queue import QueueWorker, WorkerConfig, backoff_delay, wait_any
from shortlist.queue import worker as worker_module
from shortlist.queue.worker import database_trouble, transaction_conflict
from tests.helpers import RecordedWaits, wait_for
from tests.memory_queue import Flaky, Job, MemoryQueue, NoKeeper


async def until(condition: Callable[[], bool]) -> None:
    async def check() -> bool:
        return condition()

    await wait_for(check, timeout=10, interval=0.005)


def fast(**overrides: float) -> WorkerConfig:
    values: dict[str, float] = {
        "batch_size": 3,
        "poll_interval": 0.01,
        "backoff_base": 0.01,
        "backoff_max": 0.05,
        "grace": 5.0,
    }
    return WorkerConfig(**(values | overrides))  # type: ignore[arg-type]


async def run_until(queue: MemoryQueue, done: int, *workers: QueueWorker[Job]) -> None:
    stop = asyncio.Event()
    tasks = [asyncio.create_task(w.run(stop)) for w in workers]
    await until(lambda: queue.count("done") >= done)
    stop.set()
    await asyncio.gather(*tasks)


def worker(queue: MemoryQueue, config: WorkerConfig, name: str = "w") -> QueueWorker[Job]:
    return QueueWorker(queue, config, keeper=NoKeeper(), worker_id=name)  # type: ignore[arg-type]


def test_backoff_doubles_up_to_the_cap() -> None:
    assert [backoff_delay(a, 30, 120) for a in range(5)] == [30, 60, 120, 120, 120]
    with pytest.raises(ValueError):
        backoff_delay(-1, 30, 120)


async def test_every_item_is_handled_exactly_once_by_concurrent_workers() -> None:
    queue = MemoryQueue(50)
    a = worker(queue, fast(concurrency=2), "a")
    b = worker(queue, fast(concurrency=3), "b")
    await run_until(queue, 50, a, b)
    assert all(len(r.handled_by) == 1 for r in queue.rows.values())
    assert {w for r in queue.rows.values() for w in r.handled_by} == {"a", "b"}


async def test_a_transient_error_releases_the_batch_and_backs_off() -> None:
    flaky = Flaky(times=2)
    queue = MemoryQueue(3, hook=flaky)
    await run_until(queue, 3, worker(queue, fast(backoff_base=0.05, backoff_max=1.0)))
    assert queue.leases.released == [3, 3]
    first, second, third = flaky.calls
    # 0.05 s after the first failure, 0.1 s after the second: base × 2^attempt.
    assert second - first >= 0.05 and third - second >= 0.1


async def test_retry_after_stretches_the_backoff() -> None:
    flaky = Flaky(times=1, retry_after=0.3)
    queue = MemoryQueue(1, hook=flaky)
    await run_until(queue, 1, worker(queue, fast()))
    assert flaky.calls[1] - flaky.calls[0] >= 0.3


async def test_the_throttle_spaces_busy_cycles(monkeypatch: pytest.MonkeyPatch) -> None:
    waits = RecordedWaits(monkeypatch, worker_module)
    queue = MemoryQueue(6)
    stop = asyncio.Event()
    task = asyncio.create_task(worker(queue, fast(throttle=30.0)).run(stop))
    await waits.until_one(30.0)  # the worker is in the throttle's wait ...
    assert queue.count("done") == 3 and queue.claims == 1  # ... before a second claim
    stop.set()  # ... which a stop request ends at once
    async with asyncio.timeout(1):
        await task


async def test_stop_lets_the_batch_in_flight_commit(monkeypatch: pytest.MonkeyPatch) -> None:
    started, proceed, stopping = asyncio.Event(), asyncio.Event(), asyncio.Event()

    async def slow(worker_id: str, items: list[Job]) -> None:
        started.set()
        await proceed.wait()

    shutdown = QueueWorker._shutdown

    async def shutting_down(self: QueueWorker[Job]) -> None:
        stopping.set()
        await shutdown(self)

    monkeypatch.setattr(QueueWorker, "_shutdown", shutting_down)
    queue = MemoryQueue(3, hook=slow)
    stop = asyncio.Event()
    task = asyncio.create_task(worker(queue, fast()).run(stop))
    await started.wait()
    stop.set()
    async with asyncio.timeout(5):
        await stopping.wait()  # the loop saw the stop; the batch is still running
    assert not task.done() and queue.count("running") == 3
    proceed.set()
    await task
    assert queue.count("done") == 3


async def test_the_end_of_the_grace_cancels_the_batch_and_releases_it() -> None:
    async def hang(worker_id: str, items: list[Job]) -> None:
        await asyncio.Event().wait()

    queue = MemoryQueue(3, hook=hang)
    stop = asyncio.Event()
    task = asyncio.create_task(worker(queue, fast(grace=0.1)).run(stop))
    await until(lambda: queue.count("running") == 3)
    stop.set()
    async with asyncio.timeout(5):
        await task
    assert queue.count("queued") == 3 and queue.leases.released == [3]


async def test_wait_any_returns_on_the_first_and_leaves_tasks_running() -> None:
    event = asyncio.Event()
    task = asyncio.create_task(asyncio.sleep(10))
    asyncio.get_running_loop().call_later(0.01, event.set)
    async with asyncio.timeout(1):
        await wait_any(event.wait(), task, timeout=None)
    assert not task.done()
    task.cancel()
    async with asyncio.timeout(1):
        await wait_any(asyncio.Event().wait(), timeout=0.01)  # the timeout ends it


async def test_drain_stops_once_a_claim_comes_back_empty() -> None:
    queue = MemoryQueue(7)
    async with asyncio.timeout(5):
        await worker(queue, fast(poll_interval=3600, concurrency=2)).run(
            asyncio.Event(), drain=True
        )
    assert queue.count("done") == 7


class DatabaseDown(MemoryQueue):
    """Claims fail ``outages`` times (the database is away), then one batch fails transiently."""

    def __init__(self, outages: int) -> None:
        super().__init__(1, hook=Flaky(times=1))
        self.outages = outages

    async def claim(self, worker_id: str, limit: int, lease: float) -> list[Job]:
        if self.outages > 0:
            self.outages -= 1
            raise psycopg.OperationalError("the database is restarting")
        return await super().claim(worker_id, limit, lease)


async def test_a_database_outage_does_not_grow_the_work_backoff() -> None:
    # The outage's waits are its own (1 s base, capped at the work's base here); the batch's
    # transient error after it backs off by the work's first step, not by one per outage.
    queue = DatabaseDown(outages=4)
    w = worker(queue, fast(backoff_base=0.05, backoff_max=60.0))
    await run_until(queue, 1, w)
    hook = queue.hook
    assert isinstance(hook, Flaky)
    first, second = hook.calls
    assert 0.05 <= second - first < 0.5


def test_a_transaction_rolled_back_for_a_conflict_is_the_works_not_the_databases() -> None:
    # A deadlock or serialization failure is an OperationalError in psycopg, but the server is
    # there: the work's back-off and retry, not the wait for a database to come back.
    conflict = psycopg.errors.DeadlockDetected("deadlock detected")
    assert not database_trouble(conflict)
    wrapped = TransientError("batch rolled back")
    wrapped.__cause__ = psycopg.errors.SerializationFailure("could not serialize")
    assert not database_trouble(wrapped)
    assert database_trouble(psycopg.OperationalError("the database is restarting"))
    assert transaction_conflict(conflict)


async def test_a_handler_rolled_back_for_a_conflict_is_given_back_as_transient(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Any queue's handler: a deadlock the server broke gives the batch back and backs off as a
    transient error does (a warning, no traceback), and the batch is handled again."""
    calls = 0

    async def deadlock_once(worker_id: str, items: list[Job]) -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise psycopg.errors.DeadlockDetected("deadlock detected")

    queue = MemoryQueue(2, hook=deadlock_once)
    with caplog.at_level(logging.WARNING, logger=worker_module.__name__):
        await run_until(queue, 2, worker(queue, fast(backoff_base=0.05, backoff_max=1.0)))
    assert queue.leases.released == [2] and calls == 2
    assert [r.levelno for r in caplog.records if "memory:" in r.getMessage()] == [logging.WARNING]
    assert "transient error" in caplog.records[-1].getMessage()
