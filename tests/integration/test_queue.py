"""The queue primitive on its own (``shortlist.queue``), over a scratch table of this test's
database: SKIP LOCKED claims, transient back-off, graceful stop, NOTIFY wake-up, leases."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

import pytest

from shortlist.db.types import AsyncPool
from shortlist.errors import TransientError
from shortlist.queue import (
    DONE,
    Batch,
    LeaseKeeper,
    LeaseTable,
    Notifier,
    QueueWorker,
    WorkerConfig,
    backoff_delay,
)
from shortlist.queue.outcome import Outcomes
from tests.helpers import wait_for

CHANNEL = "scratch_work"

SCHEMA = """
CREATE TABLE scratch_jobs (
    id            integer PRIMARY KEY,
    status        text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'done')),
    handled_by    text,
    locked_by     text,
    locked_until  timestamptz
)
"""

CLAIM = """
WITH claimable AS (
    SELECT id FROM scratch_jobs
     WHERE status = 'queued' AND (locked_until IS NULL OR locked_until < now())
     ORDER BY id
     LIMIT %(limit)s
       FOR UPDATE SKIP LOCKED
)
UPDATE scratch_jobs AS t
   SET locked_by = %(worker_id)s, locked_until = now() + make_interval(secs => %(lease)s)
  FROM claimable
 WHERE t.id = claimable.id
RETURNING t.id
"""

FINISH = """
UPDATE scratch_jobs
   SET status = 'done', handled_by = %(worker_id)s
 WHERE id = ANY(%(ids)s) AND status = 'queued'
RETURNING id
"""

Hook = Callable[[str, list[int]], Awaitable[None]]


class Job(int):
    """A scratch row's id, as the worker sees claimed items (``item.id``)."""

    @property
    def id(self) -> int:
        return int(self)


class RecordingLeases(LeaseTable):
    """The scratch table's leases, recording how many rows each give-back gave back."""

    def __init__(self, released: list[int]) -> None:
        super().__init__("scratch_jobs", key_type="integer")
        object.__setattr__(self, "released", released)

    async def settle_now(self, pool: AsyncPool, worker_id: str, outcomes: Outcomes) -> int:
        n = await super().settle_now(pool, worker_id, outcomes)
        if any(o.kind == "give_back" for o in outcomes.values()):
            self.released.append(n)
        return n


class ScratchQueue:
    """A minimal pipeline on the primitive; records what the worker asks of it."""

    name = "scratch"

    def __init__(self, pool: AsyncPool, *, hook: Hook | None = None) -> None:
        self.pool = pool
        self.channel: str | None = CHANNEL
        self.hook = hook
        self.released: list[int] = []
        """Rows actually released in the database, per release call."""
        self.leases = RecordingLeases(self.released)
        self.claims = 0
        self.claimed: list[int] = []
        self.finished: list[int] = []

    async def claim(self, worker_id: str, limit: int, lease: float) -> list[Job]:
        async with self.pool.connection() as conn:
            cur = await conn.execute(
                CLAIM, {"worker_id": worker_id, "limit": limit, "lease": lease}
            )
            ids = sorted(Job(r["id"]) for r in await cur.fetchall())
        self.claims += 1
        self.claimed.extend(ids)
        return ids

    async def handle(self, batch: Batch[Job]) -> None:
        if self.hook is not None:
            await self.hook(batch.worker_id, list(batch.items))
        await self.finish(batch)

    async def finish(self, batch: Batch[Job]) -> list[int]:
        async with self.pool.connection() as conn, conn.transaction():
            held = await batch.finish(conn, dict.fromkeys(batch.items, DONE))
            cur = await conn.execute(FINISH, {"worker_id": batch.worker_id, "ids": list(held)})
            done = sorted(r["id"] for r in await cur.fetchall())
        self.finished.extend(done)
        return done


@pytest.fixture
async def scratch(pool: AsyncPool) -> AsyncPool:
    async with pool.connection() as conn:
        await conn.execute(SCHEMA)
    return pool


async def add_jobs(pool: AsyncPool, n: int, *, start: int = 1) -> None:
    async with pool.connection() as conn:
        await conn.execute(
            "INSERT INTO scratch_jobs (id) SELECT generate_series(%s::int, %s::int)",
            (start, start + n - 1),
        )


async def rows(pool: AsyncPool, where: str = "true") -> list[dict[str, Any]]:
    async with pool.connection() as conn:
        cur = await conn.execute(f"SELECT * FROM scratch_jobs WHERE {where} ORDER BY id")
        return await cur.fetchall()


async def count(pool: AsyncPool, where: str) -> int:
    return len(await rows(pool, where))


async def count_is(pool: AsyncPool, where: str, n: int) -> bool:
    return await count(pool, where) == n


def fast(**overrides: Any) -> WorkerConfig:
    defaults: dict[str, Any] = {
        "batch_size": 10,
        "poll_interval": 0.05,
        "backoff_base": 0.05,
        "backoff_max": 0.2,
        "lease": 30.0,
    }
    return WorkerConfig(**(defaults | overrides))


class Running:
    """Workers running as tasks until ``stop``; ``stop()`` returns how long they took."""

    def __init__(self, workers: Sequence[QueueWorker[Any]]) -> None:
        self.event = asyncio.Event()
        self.tasks = [asyncio.create_task(w.run(self.event)) for w in workers]

    async def stop(self) -> float:
        started = time.monotonic()
        self.event.set()
        async with asyncio.timeout(10.0):
            await asyncio.gather(*self.tasks)
        return time.monotonic() - started


@pytest.fixture
async def running() -> AsyncIterator[Callable[[Sequence[QueueWorker[Any]]], Running]]:
    started: list[Running] = []

    def start(workers: Sequence[QueueWorker[Any]]) -> Running:
        r = Running(workers)
        started.append(r)
        return r

    yield start
    for r in started:  # a failed assertion must not leave workers running
        r.event.set()
        await asyncio.gather(*r.tasks, return_exceptions=True)


async def test_concurrent_workers_handle_every_row_exactly_once(
    scratch: AsyncPool, running: Callable[[Sequence[QueueWorker[Any]]], Running]
) -> None:
    async def yield_between(worker_id: str, items: list[int]) -> None:
        await asyncio.sleep(0)  # let the other workers' claims interleave with this batch

    queues = [ScratchQueue(scratch, hook=yield_between) for _ in range(4)]
    await add_jobs(scratch, 600)
    run = running([QueueWorker(q, fast(batch_size=7, concurrency=2)) for q in queues])
    await wait_for(lambda: count_is(scratch, "status = 'done'", 600), timeout=30)
    await run.stop()

    claimed = Counter(i for q in queues for i in q.claimed)
    assert sorted(claimed) == list(range(1, 601))
    assert set(claimed.values()) == {1}, "a row was claimed twice"
    assert await count(scratch, "status = 'done' AND locked_by IS NULL") == 600
    assert sum(1 for q in queues if q.finished) >= 2, "the workers did not share the work"


async def _async_true(value: bool) -> bool:
    return value


async def test_transient_error_releases_rows_and_backs_off(
    scratch: AsyncPool, running: Callable[[Sequence[QueueWorker[Any]]], Running]
) -> None:
    attempts: list[float] = []

    async def flaky(worker_id: str, items: list[int]) -> None:
        attempts.append(time.monotonic())
        if len(attempts) <= 3:
            raise TransientError("provider down")

    queue = ScratchQueue(scratch, hook=flaky)
    await add_jobs(scratch, 5)
    config = fast(backoff_base=0.2, backoff_max=0.4, poll_interval=30.0, throttle=30.0)
    run = running([QueueWorker(queue, config)])
    await wait_for(lambda: count(scratch, "status = 'done'"), timeout=10)
    await run.stop()

    # Every failed attempt handed its 5 rows back; the 4th attempt reclaimed and finished them.
    assert queue.released == [5, 5, 5]
    assert queue.claimed == [1, 2, 3, 4, 5] * 4
    gaps = [b - a for a, b in itertools.pairwise(attempts)]
    expected = [backoff_delay(a, 0.2, 0.4) for a in range(3)]
    assert expected == [0.2, 0.4, 0.4]
    for gap, delay in zip(gaps, expected, strict=True):
        # At least the back-off; far less than the 30 s throttle, which a failure must not add.
        assert delay <= gap < delay + 5.0, (gaps, expected)


async def test_retry_after_stretches_the_backoff(
    scratch: AsyncPool, running: Callable[[Sequence[QueueWorker[Any]]], Running]
) -> None:
    attempts: list[float] = []

    async def throttled(worker_id: str, items: list[int]) -> None:
        attempts.append(time.monotonic())
        if len(attempts) == 1:
            raise TransientError("429", retry_after=0.6)

    await add_jobs(scratch, 1)
    run = running([QueueWorker(ScratchQueue(scratch, hook=throttled), fast(backoff_base=0.05))])
    await wait_for(lambda: count(scratch, "status = 'done'"), timeout=10)
    await run.stop()
    assert attempts[1] - attempts[0] >= 0.6


async def test_throttle_spaces_busy_cycles(
    scratch: AsyncPool, running: Callable[[Sequence[QueueWorker[Any]]], Running]
) -> None:
    queue = ScratchQueue(scratch)
    await add_jobs(scratch, 3)
    run = running([QueueWorker(queue, fast(batch_size=1, throttle=30.0))])
    await wait_for(lambda: _async_true(len(queue.finished) >= 1))
    # The throttle (the seed's poll interval between cycles) holds the second claim back, and a
    # stop request cuts that wait short.
    assert await run.stop() < 5.0
    assert queue.claims == 1
    assert queue.finished == [1]


async def test_stop_lets_the_batch_in_flight_finish(
    scratch: AsyncPool, running: Callable[[Sequence[QueueWorker[Any]]], Running]
) -> None:
    started = asyncio.Event()
    proceed = asyncio.Event()
    outcome: list[str] = []

    async def slow(worker_id: str, items: list[int]) -> None:
        started.set()
        try:
            await proceed.wait()
        except asyncio.CancelledError:
            outcome.append("cancelled")
            raise
        outcome.append("completed")

    queue = ScratchQueue(scratch, hook=slow)
    await add_jobs(scratch, 4)
    # Long poll and throttle: run() can only return promptly if stop cuts those waits.
    worker = QueueWorker(queue, fast(poll_interval=30.0, throttle=30.0))
    run = running([worker])
    await started.wait()
    stopping = asyncio.create_task(run.stop())
    # Stop is requested while the batch waits: run() must not return, nor cancel the batch.
    done, _ = await asyncio.wait([stopping], timeout=0.3)
    assert not done
    proceed.set()
    assert await stopping < 5.0
    assert outcome == ["completed"]
    assert await count(scratch, "status = 'done' AND locked_by IS NULL") == 4


async def test_cancelling_run_does_not_cut_a_batch(scratch: AsyncPool) -> None:
    started = asyncio.Event()
    proceed = asyncio.Event()

    async def slow(worker_id: str, items: list[int]) -> None:
        started.set()
        await proceed.wait()

    queue = ScratchQueue(scratch, hook=slow)
    await add_jobs(scratch, 2)
    task = asyncio.create_task(QueueWorker(queue, fast()).run(asyncio.Event()))
    await started.wait()
    task.cancel()
    done, _ = await asyncio.wait([task], timeout=0.3)
    assert not done, "run() returned while its batch was still in flight"
    proceed.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert queue.finished == [1, 2]


async def test_notify_wakes_an_idle_worker(
    db_url: str,
    scratch: AsyncPool,
    running: Callable[[Sequence[QueueWorker[Any]]], Running],
) -> None:
    notifier = Notifier(db_url)
    notifier.start()
    try:
        queue = ScratchQueue(scratch)
        run = running([QueueWorker(queue, fast(poll_interval=30.0), notifier=notifier)])
        await _listening(scratch, notifier, CHANNEL)
        claims_before = queue.claims

        began = time.monotonic()
        async with scratch.connection() as conn:
            await conn.execute("INSERT INTO scratch_jobs (id) VALUES (1)")
            await conn.execute("SELECT pg_notify(%s, 'scratch_jobs')", (CHANNEL,))
        await wait_for(lambda: count(scratch, "status = 'done'"), timeout=3.0)
        assert time.monotonic() - began < 3.0  # the poll interval is 30 s
        # Idle means idle: a handful of claims (the listener's and the probes' wake-ups, this
        # row's), where a busy loop would have made hundreds in the same time.
        assert queue.claims - claims_before <= 10
        await run.stop()
    finally:
        await notifier.stop()


async def _listening(pool: AsyncPool, notifier: Notifier, channel: str) -> None:
    """Wait until ``notifier`` really LISTENs on ``channel`` (subscriptions are picked up
    asynchronously), by notifying until a probe subscription hears it."""
    probe = notifier.subscribe(channel)

    async def heard() -> bool:
        async with pool.connection() as conn:
            await conn.execute("SELECT pg_notify(%s, 'probe')", (channel,))
        try:
            async with asyncio.timeout(0.2):
                await probe.wait()
        except TimeoutError:
            return False
        return True

    try:
        await wait_for(heard, timeout=10, message=f"LISTEN {channel}")
    finally:
        notifier.unsubscribe(channel, probe)


async def test_expired_leases_are_reclaimed_and_live_ones_respected(
    scratch: AsyncPool, running: Callable[[Sequence[QueueWorker[Any]]], Running]
) -> None:
    queue = ScratchQueue(scratch)
    await add_jobs(scratch, 6)
    # A crashed worker's claim: 1-3 under a lease that has run out, 4-6 under one still live.
    crashed = await queue.claim("crashed", 3, lease=0.05)
    assert crashed == [1, 2, 3]
    async with scratch.connection() as conn:
        await conn.execute(
            "UPDATE scratch_jobs SET locked_until = now() - interval '1 second' WHERE id <= 3"
        )
        await conn.execute(
            "UPDATE scratch_jobs SET locked_by = 'alive', locked_until = now() + interval '1 hour'"
            " WHERE id > 3"
        )
    worker = QueueWorker(queue, fast())
    run = running([worker])
    await wait_for(lambda: count(scratch, "status = 'done'"))
    await wait_for(lambda: _async_true(queue.claims >= 4), message="more claim rounds")
    await run.stop()

    done = await rows(scratch, "status = 'done'")
    assert [r["id"] for r in done] == [1, 2, 3]
    assert {r["handled_by"] for r in done} == {worker.worker_id}
    assert await count(scratch, "status = 'queued' AND locked_by = 'alive'") == 3
    # The crashed worker coming back late cannot touch rows it no longer holds.
    assert await queue.finish(Batch("crashed", crashed, queue.leases)) == []


async def test_heartbeat_extends_the_lease_of_work_in_flight(
    scratch: AsyncPool, running: Callable[[Sequence[QueueWorker[Any]]], Running]
) -> None:
    proceed = asyncio.Event()

    async def slow(worker_id: str, items: list[int]) -> None:
        await proceed.wait()

    queue = ScratchQueue(scratch, hook=slow)
    await add_jobs(scratch, 3)
    worker = QueueWorker(queue, fast(lease=1.2, heartbeat=0.4))
    run = running([worker])
    await wait_for(lambda: count(scratch, "locked_by IS NOT NULL"))
    first = (await rows(scratch))[0]["locked_until"]
    # Several heartbeats: the work has now outlived its original 1.2 s lease.
    await wait_for(lambda: _async_true(worker.keeper.beats >= 4), timeout=10)
    current = await rows(scratch)
    assert all(r["locked_by"] == worker.worker_id for r in current)
    assert min(r["locked_until"] for r in current) > first
    async with scratch.connection() as conn:
        cur = await conn.execute("SELECT bool_and(locked_until > now()) AS live FROM scratch_jobs")
        assert (await cur.fetchone() or {})["live"] is True
    assert await queue.claim("intruder", 10, lease=30.0) == []
    proceed.set()
    await wait_for(lambda: count(scratch, "status = 'done'"))
    await run.stop()
    assert sorted(queue.finished) == [1, 2, 3]


async def test_notifier_keeps_listening_after_a_new_subscription(db_url: str) -> None:
    """A subscription made while the listener waits, followed by a NOTIFY, once left the
    notifies() generator open and the listener stuck on its connection lock."""
    import psycopg

    from shortlist.queue.notify import Notifier

    notifier = Notifier(db_url)
    notifier.start()
    try:
        first = notifier.payloads("chan_a")
        await asyncio.wait_for(notifier.connected.wait(), 10)

        async def notify(channel: str, payload: str) -> None:
            async with await psycopg.AsyncConnection.connect(db_url, autocommit=True) as conn:
                await conn.execute("SELECT pg_notify(%s, %s)", (channel, payload))

        async def received(q: asyncio.Queue[str], channel: str, payload: str) -> bool:
            await notify(channel, payload)
            try:
                while True:
                    got = await asyncio.wait_for(q.get(), 0.5)
                    if got == payload:
                        return True
            except TimeoutError:
                return False

        await wait_for(lambda: received(first, "chan_a", "one"), timeout=10, message="chan_a")
        second = notifier.payloads("chan_b")  # sets the restart flag while listening
        await wait_for(lambda: received(first, "chan_a", "two"), timeout=10, message="chan_a")
        await wait_for(lambda: received(second, "chan_b", "three"), timeout=10, message="chan_b")
    finally:
        await asyncio.wait_for(notifier.stop(), 10)


async def test_one_heartbeat_statement_renews_every_worker_of_the_process(
    scratch: AsyncPool,
) -> None:
    """Two queues on two tables, one keeper: one statement per beat renews both."""
    async with scratch.connection() as conn:
        await conn.execute("CREATE TABLE other_jobs (LIKE scratch_jobs INCLUDING ALL)")
        await conn.execute("INSERT INTO scratch_jobs (id) SELECT generate_series(1, 3)")
        await conn.execute("INSERT INTO other_jobs (id) SELECT generate_series(1, 2)")
        await conn.execute(
            "UPDATE scratch_jobs SET locked_by = 'a', locked_until = now() + interval '1 second'"
        )
        await conn.execute(
            "UPDATE other_jobs SET locked_by = 'b', locked_until = now() + interval '1 second'"
        )
    keeper = LeaseKeeper(scratch, every=3600.0)
    scratch_table = LeaseTable("scratch_jobs", key_type="integer")
    other_table = LeaseTable("other_jobs", key_type="integer")
    async with (
        keeper.renewing(scratch_table, 600.0, "a", lambda: [1, 2, 3]),
        keeper.renewing(other_table, 600.0, "b", lambda: [1, 2]),
        # Rows another worker holds are never renewed, whatever keys are asked for.
        keeper.renewing(other_table, 600.0, "c", lambda: [1]),
    ):
        assert await keeper.beat() == 5
    assert keeper.beats == 1
    async with scratch.connection() as conn:
        cur = await conn.execute(
            "SELECT bool_and(locked_until > now() + interval '500 seconds') AS renewed FROM"
            " (SELECT locked_until FROM scratch_jobs UNION ALL SELECT locked_until FROM other_jobs)"
            " AS t"
        )
        assert (await cur.fetchone() or {})["renewed"] is True


async def test_a_heartbeat_skips_rows_another_transaction_holds_and_waits_for_none(
    scratch: AsyncPool,
) -> None:
    """A handler's transaction writing its own rows (its result, then settle) holds their row
    locks: the beat renews every other lease at once instead of waiting behind it — waiting,
    it deadlocked with such a transaction that then wrote a row the beat had locked first."""
    async with scratch.connection() as conn:
        await conn.execute("INSERT INTO scratch_jobs (id) SELECT generate_series(1, 3)")
        await conn.execute(
            "UPDATE scratch_jobs SET locked_by = 'a', locked_until = now() + interval '1 second'"
        )
    keeper = LeaseKeeper(scratch, every=3600.0)
    table = LeaseTable("scratch_jobs", key_type="integer")
    async with (
        scratch.connection() as holder,
        keeper.renewing(table, 600.0, "a", lambda: [3, 2, 1]),
    ):
        async with holder.transaction():
            await holder.execute("UPDATE scratch_jobs SET handled_by = 'a' WHERE id = 2")
            assert await asyncio.wait_for(keeper.beat(), 10) == 2
            # The handler's transaction goes on to its other rows, which the beat left.
            await asyncio.wait_for(
                holder.execute("UPDATE scratch_jobs SET handled_by = 'a' WHERE id IN (1, 3)"), 10
            )
        assert await asyncio.wait_for(keeper.beat(), 10) == 3
    async with scratch.connection() as conn:
        cur = await conn.execute(
            "SELECT count(*) AS renewed FROM scratch_jobs"
            " WHERE locked_until > now() + interval '500 seconds'"
        )
        assert (await cur.fetchone() or {})["renewed"] == 3
