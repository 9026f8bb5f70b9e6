"""The run loop every queue worker uses.

    loop:
        items = queue.claim(batch)            # SKIP LOCKED + lease, committed
        if items: queue.handle(items)         # a task of its own; never cut by a stop request
        wait_any(NOTIFY, sleep, stop)         # the only await a stop request ends

A queue says what it claims and how it handles it (:class:`Queue`); the worker owns the rest:
leases renewed by the process's :class:`~shortlist.queue.lease.LeaseKeeper`, every claimed
item's outcome recorded (:class:`Batch`: what the handler returned, or given back when it
raised or said nothing of an item), back-off, the throttle between busy cycles, and shutdown.
``drain``: stop once a claim comes back empty and nothing is in flight (``sources crawl``).

Shutdown: ``stop`` ends the idle wait at once; batches in flight then get
``WorkerConfig.grace`` seconds to commit. Those still running after that are cancelled: their
transactions roll back and their items are released, so the process exits on time and nothing
stays claimed. A cancellation of ``run`` is a stop too (the grace still applies); a second one
during the grace cancels the batches at once.

Handlers signal what to do next with outcomes (:mod:`shortlist.queue.outcome`) and the error
types of ``shortlist.errors``: a ``TransientError`` gives the claimed rows back untouched and
backs the worker off (``base × 2^attempt``, capped); a ``PermanentError`` fails them where the
table records failures. Anything a handler can attribute to one item it returns for that item.
The database going away is nobody's work failing: the worker waits for it with a short back-off
of its own (ended early when the process's listener reconnects), and the work's back-off does
not grow with outages.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import uuid
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

import psycopg

from shortlist import metrics
from shortlist.db.types import AsyncConn, AsyncPool
from shortlist.errors import PermanentError, TransientError
from shortlist.queue.lease import LeaseKeeper, LeaseTable
from shortlist.queue.notify import Notifier
from shortlist.queue.outcome import DONE, GIVE_BACK, Failed, Outcome, Outcomes

log = logging.getLogger(__name__)

RELEASE_TIMEOUT = 5.0
"""Seconds a batch cancelled at the end of the grace period may take to give its items back."""
DATABASE_RETRY_BASE = 1.0
"""First wait (seconds) after the database failed a claim or a batch; doubles up to 10 s."""


def transaction_conflict(exc: BaseException) -> bool:
    """The server rolled the transaction back for a conflict with another one (SQLSTATE class
    40: a deadlock, a serialization failure); running it again may well succeed."""
    return isinstance(exc, psycopg.Error) and (exc.sqlstate or "").startswith("40")


def database_trouble(exc: BaseException) -> bool:
    """The database (or the way to it) failed, not the work: a connection lost or refused, the
    pool out of connections (``PoolTimeout`` is one), wrapped in a ``TransientError`` or not.
    psycopg reports a socket's trouble as ``OperationalError``; a bare ``OSError`` is some
    other peer's (a provider's), and stays the work's. So is a transaction the server rolled
    back for a conflict with another (a deadlock, a serialization failure: an
    ``OperationalError`` too in psycopg): the work's to retry."""
    seen: BaseException | None = exc
    for _ in range(4):
        if seen is None:
            return False
        if transaction_conflict(seen):
            return False
        if isinstance(seen, psycopg.OperationalError):
            return True
        seen = seen.__cause__
    return False


class Claimed(Protocol):
    """A claimed item: its key in the queue's lease table."""

    @property
    def id(self) -> Hashable: ...


Item = TypeVar("Item", bound=Claimed)


@dataclass
class Batch(Generic[Item]):
    """A claimed batch as its handler sees it: the items, and the one way to end their leases.

    The handler returns an outcome per item (or raises); the worker records them when the
    handler is through (:meth:`close`). A handler that writes an item's rows ends its lease in
    that transaction instead (:meth:`finish`), so both commit together. Whatever the handler
    neither finished nor returned is given back."""

    worker_id: str
    items: list[Item]
    leases: LeaseTable
    outcomes: dict[Hashable, Outcome] = field(default_factory=dict)
    """Outcomes to record at :meth:`close` (the handler's return value lands here too)."""
    finished: set[Hashable] = field(default_factory=set)

    async def finish(self, conn: AsyncConn, outcomes: Outcomes) -> set[Hashable]:
        """End these items' leases on ``conn``, inside the transaction that writes their rows;
        returns the keys this worker still held. An item it no longer held (its lease ran out
        and another worker has it) must get nothing written: either call this last and roll the
        transaction back when a key is missing (tables whose claim moves a status: a running
        row keeps its lease until its status moves on), or call it first and write only the
        rows it returns (the embedding queue: the vector is written once, after the lease
        ended, the row locked meanwhile). If the transaction rolls back, the handler returns
        an outcome for those items (or their leases run out)."""
        held = await self.leases.settle(conn, self.worker_id, outcomes)
        self.finished.update(outcomes)
        return held

    async def close(
        self, pool: AsyncPool, *, default: Outcome = GIVE_BACK, failed: bool = False
    ) -> int:
        """Record the outcomes not finished yet, ``default`` for items nobody accounted for, in
        one statement; returns how many leases it ended. ``failed``: the handler raised, so a
        transaction that finished items may have rolled back: ``default`` goes to those too
        (the guard makes it nothing where the finish committed)."""
        todo: dict[Hashable, Outcome] = {}
        for item in self.items:
            outcome = self.outcomes.get(item.id)
            if item.id in self.finished and not failed and (outcome is None or outcome == DONE):
                continue  # finished in its own transaction: nothing more to record
            todo[item.id] = outcome or default
        self.finished.update(todo)
        return await self.leases.settle_now(pool, self.worker_id, todo)


async def each(
    batch: Batch[Item], handle_one: Callable[[Batch[Item], Item], Awaitable[Outcome]]
) -> None:
    """Handle a batch item after item (queues whose work is per item), each outcome recorded as
    it comes, so an error on one item leaves the earlier ones' outcomes standing."""
    for item in batch.items:
        batch.outcomes[item.id] = await handle_one(batch, item)


async def run_batch(queue: Queue[Item], worker_id: str, items: list[Item]) -> None:
    """What the worker does with one claimed batch, without the loop: the handler, then every
    item's outcome recorded (given back when the handler raises, and the error re-raised)."""
    batch = Batch(worker_id, items, queue.leases)
    try:
        returned = await queue.handle(batch)
    except PermanentError as exc:
        default: Outcome = Failed(str(exc)) if "failed" in queue.leases.records else GIVE_BACK
        await batch.close(queue.pool, default=default, failed=True)
        raise
    except BaseException:
        await asyncio.shield(_close_quietly(queue, batch))
        raise
    if returned:
        batch.outcomes.update(returned)
    await batch.close(queue.pool)


async def _close_quietly(queue: Queue[Item], batch: Batch[Item]) -> None:
    try:
        await asyncio.wait_for(batch.close(queue.pool, failed=True), RELEASE_TIMEOUT)
    except Exception:
        # The leases expire on their own; nothing is lost if this fails.
        log.exception("%s: could not give back %d items", queue.name, len(batch.items))


class Queue(Protocol[Item]):
    """What a pipeline provides to run on the primitive."""

    name: str
    channel: str | None
    """NOTIFY channel that signals new work (``None``: poll only)."""
    pool: AsyncPool
    leases: LeaseTable
    """The table the claims lease rows of: the worker renews and settles them there."""

    async def claim(self, worker_id: str, limit: int, lease: float) -> list[Item]:
        """Claim up to ``limit`` items (SKIP LOCKED + lease) in a committed transaction."""
        ...

    async def handle(self, batch: Batch[Item]) -> Outcomes | None:
        """Do the work and commit it; return each item's outcome (or record it through
        ``batch``). Raise ``TransientError`` to give the batch back and back off."""
        ...


@dataclass(frozen=True)
class WorkerConfig:
    batch_size: int = 1
    """Items per claim and per ``handle`` call."""
    concurrency: int = 1
    """``handle`` calls in flight at once (each on its own claimed batch)."""
    poll_interval: float = 30.0
    """Longest idle wait; a NOTIFY on the queue's channel ends it early."""
    throttle: float = 0.0
    """Wait after a busy cycle before claiming again (spreads load on a provider)."""
    backoff_base: float = 30.0
    backoff_max: float = 120.0
    lease: float = 30.0
    """Seconds a claim stays valid without a heartbeat."""
    heartbeat: float = 10.0
    """Seconds between lease renewals (when the worker has no process-wide keeper)."""
    grace: float = 60.0
    """Seconds batches in flight may take to finish after ``stop``; then they are cancelled."""


def backoff_delay(attempt: int, base: float, cap: float) -> float:
    """``base × 2^attempt``, capped (30 s, 60 s, 120 s, 120 s, … with the indexer's defaults)."""
    if attempt < 0:
        raise ValueError("attempt must be >= 0")
    return float(min(cap, base * (2 ** min(attempt, 32))))


def new_worker_id(queue_name: str) -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{queue_name}:{uuid.uuid4().hex[:8]}"


async def wait_any(*awaitables: Awaitable[object], timeout: float | None) -> None:  # noqa: ASYNC109
    """Return when the first of ``awaitables`` completes or after ``timeout`` seconds (``None``:
    no limit). The ones created here are cancelled; tasks passed in are left running."""
    futures = [asyncio.ensure_future(a) for a in awaitables]
    owned = [f for f, a in zip(futures, awaitables, strict=True) if f is not a]
    try:
        await asyncio.wait(
            futures,
            timeout=None if timeout is None else max(timeout, 0.0),
            return_when="FIRST_COMPLETED",
        )
    finally:
        for f in owned:
            f.cancel()


class QueueWorker(Generic[Item]):
    def __init__(
        self,
        queue: Queue[Item],
        config: WorkerConfig,
        *,
        notifier: Notifier | None = None,
        keeper: LeaseKeeper | None = None,
        worker_id: str | None = None,
    ) -> None:
        self.queue = queue
        self.config = config
        self.notifier = notifier
        self.keeper = keeper or LeaseKeeper(queue.pool, every=config.heartbeat)
        self.worker_id = worker_id or new_worker_id(queue.name)
        self._inflight: dict[asyncio.Task[None], list[Item]] = {}
        self._attempt = 0
        """Failed attempts of the work in a row (the back-off's exponent)."""
        self._db_attempt = 0
        """Failed attempts in a row to reach the database (a back-off of its own)."""
        self.handled_batches = 0

    def held(self) -> list[Hashable]:
        """Keys of the items this worker is working on (the keeper renews their leases)."""
        return [item.id for batch in self._inflight.values() for item in batch]

    # -- work ------------------------------------------------------------------------------------

    async def _handle(self, items: list[Item]) -> None:
        outcome = "handled"
        try:
            await run_batch(self.queue, self.worker_id, items)
        except asyncio.CancelledError:
            # The grace period is over: whatever was not committed rolled back with its
            # transaction, and the items were given back rather than left to their leases.
            outcome = "cancelled"
            raise
        except TransientError:
            outcome = "transient"
            metrics.QUEUE_BACKOFFS.labels(self.queue.name).inc()
            raise
        except Exception:
            outcome = "error"
            raise
        else:
            self._attempt = 0
            self.handled_batches += 1
        finally:
            metrics.QUEUE_ITEMS.labels(self.queue.name, outcome).inc(len(items))

    def _reap_finished(self) -> tuple[float, bool]:
        """Collect finished tasks; returns the back-off delay they ask for (0 if none), and
        whether it is the database's (an outage) rather than the work's.

        The tasks that failed since the last reap count as ONE failed attempt: with
        ``concurrency`` > 1, one provider outage fails every task in flight, and counting each
        of them would grow the back-off exponentially with the concurrency (8 tasks: 2^8 x base)
        instead of with the number of times the worker came back and failed again.
        """
        delay, db_delay = 0.0, 0.0
        attempt, db_attempt = self._attempt, self._db_attempt
        for task in [t for t in self._inflight if t.done()]:
            self._inflight.pop(task)
            if task.cancelled():
                continue
            exc = task.exception()
            if exc is None:
                self._db_attempt = 0
                continue
            if database_trouble(exc):
                db_delay = self._database_wait(db_attempt)
                log.warning(
                    "%s: database unavailable, retrying in %.1fs: %s",
                    self.queue.name,
                    db_delay,
                    exc,
                )
                continue
            retry_after = exc.retry_after if isinstance(exc, TransientError) else None
            wait = backoff_delay(attempt, self.config.backoff_base, self.config.backoff_max)
            if retry_after:
                wait = max(wait, retry_after)
            self._attempt = attempt + 1
            # A transaction the server rolled back for a conflict with another (two batches in
            # flight, two workers) is transient for every queue: its batch was given back whole.
            if isinstance(exc, TransientError) or transaction_conflict(exc):
                log.warning(
                    "%s: transient error, backing off %.1fs: %s", self.queue.name, wait, exc
                )
            else:
                log.error(
                    "%s: handler failed, backing off %.1fs", self.queue.name, wait, exc_info=exc
                )
            delay = max(delay, wait)
        if delay:
            return max(delay, db_delay), False
        return db_delay, db_delay > 0

    def _database_wait(self, attempt: int) -> float:
        """The wait after the database failed a claim or a batch: short (the database is back
        within seconds of a restart), its own count, never the work's back-off."""
        self._db_attempt = attempt + 1
        return backoff_delay(attempt, min(self.config.backoff_base, DATABASE_RETRY_BASE), 10.0)

    async def _pause(self, stop: asyncio.Event, delay: float, *, database: bool) -> None:
        """Wait out a back-off; one for the database also ends when the process's listener
        reconnects (it is back)."""
        waits: list[Awaitable[object]] = [stop.wait()]
        if database and self.notifier is not None and self.notifier.disconnected.is_set():
            waits.append(self.notifier.connected.wait())
        await wait_any(*waits, timeout=delay)

    # -- the loop ----------------------------------------------------------------------------------

    async def run(self, stop: asyncio.Event, *, drain: bool = False) -> None:
        """Run until ``stop`` is set (``drain``: or until a claim comes back empty with nothing
        in flight); then give in-flight work ``config.grace`` to commit."""
        wake: asyncio.Event | None = None
        if self.notifier is not None and self.queue.channel is not None:
            wake = self.notifier.subscribe(self.queue.channel)
        log.info("%s worker %s started", self.queue.name, self.worker_id)
        try:
            async with self.keeper.renewing(
                self.queue.leases, self.config.lease, self.worker_id, self.held
            ):
                try:
                    await self._loop(stop, wake, drain)
                finally:
                    await self._shutdown()
        finally:
            if wake is not None and self.notifier is not None and self.queue.channel:
                self.notifier.unsubscribe(self.queue.channel, wake)
            log.info("%s worker %s stopped", self.queue.name, self.worker_id)

    async def _loop(self, stop: asyncio.Event, wake: asyncio.Event | None, drain: bool) -> None:
        cfg = self.config
        while not stop.is_set():
            delay, database = self._reap_finished()
            if delay:
                # A back-off: another batch finishing says nothing about the provider.
                await self._pause(stop, delay, database=database)
                continue
            if len(self._inflight) >= cfg.concurrency:
                await wait_any(stop.wait(), *self._inflight, timeout=cfg.poll_interval)
                continue
            if wake is not None:
                # Cleared before the claim: a NOTIFY arriving during it still wakes the wait.
                wake.clear()
            try:
                items = await self.queue.claim(self.worker_id, cfg.batch_size, cfg.lease)
            except (psycopg.Error, OSError) as exc:
                wait = self._database_wait(self._db_attempt)
                log.warning("%s: claim failed (%s); retrying in %.1fs", self.queue.name, exc, wait)
                await self._pause(stop, wait, database=True)
                continue
            self._db_attempt = 0
            if not items:
                if drain:
                    if not self._inflight:
                        return
                    await wait_any(stop.wait(), *self._inflight, timeout=None)
                    continue
                idle = [stop.wait()] + ([wake.wait()] if wake is not None else [])
                await wait_any(*idle, timeout=cfg.poll_interval)
                continue
            metrics.QUEUE_CLAIMS.labels(self.queue.name).inc()
            # The task is never cancelled by a stop request: it runs to its commit.
            task = asyncio.create_task(self._handle(items))
            self._inflight[task] = items
            if cfg.concurrency == 1:
                await wait_any(task, stop.wait(), timeout=None)
                if not task.done():
                    break  # stopping: the batch gets the grace
                if task.cancelled() or task.exception() is not None:
                    continue  # back off (top of the loop) instead of throttling first
            if cfg.throttle > 0:
                await wait_any(stop.wait(), timeout=cfg.throttle)

    async def _shutdown(self) -> None:
        """Give the batches in flight ``config.grace`` seconds, then cancel what still runs.
        Shielded from a cancellation of ``run``, which only skips the grace."""
        if self._inflight:
            try:
                await asyncio.shield(asyncio.wait(list(self._inflight), timeout=self.config.grace))
            except asyncio.CancelledError:
                await asyncio.shield(self._cancel_inflight())
                raise
        if self._inflight and not all(t.done() for t in self._inflight):
            log.warning(
                "%s: %d batches still running after the %.1fs grace; cancelling",
                self.queue.name,
                sum(1 for t in self._inflight if not t.done()),
                self.config.grace,
            )
        await self._cancel_inflight()

    async def _cancel_inflight(self) -> None:
        """Cancel the batches still running and wait (briefly) while they hand their items
        back; a batch that cannot even do that leaves them to its lease."""
        tasks = [t for t in self._inflight if not t.done()]
        for task in tasks:
            task.cancel()
        if tasks:
            _done, stuck = await asyncio.wait(tasks, timeout=RELEASE_TIMEOUT)
            for task in stuck:
                self._inflight.pop(task, None)
            if stuck:
                log.warning(
                    "%s: %d cancelled batches did not hand back their items; their leases"
                    " will expire",
                    self.queue.name,
                    len(stuck),
                )
        self._reap_finished()
