"""The run loop every queue worker uses.

    loop:
        items = queue.claim(batch)            # SKIP LOCKED + lease, committed
        if items: queue.handle(items)         # a task of its own; never cut by a stop request
        wait_any(NOTIFY, sleep, stop)         # the only await a stop request ends

A queue says what it claims and how it handles it (:class:`Queue`); the worker owns the rest:
leases renewed by the process's :class:`~shortlist.queue.lease.LeaseKeeper`, items handed back
(released) when a handler raises, back-off, the throttle between busy cycles, and shutdown.

Shutdown: ``stop`` ends the idle wait at once; batches in flight then get
``WorkerConfig.grace`` seconds to commit. Those still running after that are cancelled: their
transactions roll back and their items are released, so the process exits on time and nothing
stays claimed. A cancellation of ``run`` is a stop too (the grace still applies); a second one
during the grace cancels the batches at once.

Handlers signal what to do next with the error types of ``shortlist.errors``: a
``TransientError`` releases the claimed rows untouched and backs the worker off
(``base × 2^attempt``, capped); anything a handler can attribute to one item it records on
that item itself (a permanent failure is data, not an exception).
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import uuid
from collections.abc import Awaitable, Hashable
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

import psycopg

from shortlist import metrics
from shortlist.db.types import AsyncPool
from shortlist.errors import TransientError
from shortlist.queue.lease import LeaseKeeper, LeaseTable
from shortlist.queue.notify import Notifier

log = logging.getLogger(__name__)

RELEASE_TIMEOUT = 5.0
"""Seconds a batch cancelled at the end of the grace period may take to release its items."""


class Claimed(Protocol):
    """A claimed item: its key in the queue's lease table."""

    @property
    def id(self) -> Hashable: ...


Item = TypeVar("Item", bound=Claimed)


class Queue(Protocol[Item]):
    """What a pipeline provides to run on the primitive."""

    name: str
    channel: str | None
    """NOTIFY channel that signals new work (``None``: poll only)."""
    pool: AsyncPool
    leases: LeaseTable
    """The table the claims lease rows of: the worker renews and releases them there."""

    async def claim(self, worker_id: str, limit: int, lease: float) -> list[Item]:
        """Claim up to ``limit`` items (SKIP LOCKED + lease) in a committed transaction."""
        ...

    async def handle(self, worker_id: str, items: list[Item]) -> None:
        """Do the work and commit it. Raise ``TransientError`` to release and back off."""
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
        self.handled_batches = 0

    def held(self) -> list[Hashable]:
        """Keys of the items this worker is working on (the keeper renews their leases)."""
        return [item.id for batch in self._inflight.values() for item in batch]

    # -- work ------------------------------------------------------------------------------------

    async def _handle(self, items: list[Item]) -> None:
        outcome = "handled"
        try:
            await self.queue.handle(self.worker_id, items)
        except asyncio.CancelledError:
            # The grace period is over: whatever was not committed rolled back with its
            # transaction; give the items back now rather than when their lease runs out.
            outcome = "cancelled"
            await self._release_quietly(items)
            raise
        except TransientError:
            outcome = "transient"
            metrics.QUEUE_BACKOFFS.labels(self.queue.name).inc()
            await self._release_quietly(items)
            raise
        except Exception:
            outcome = "error"
            await self._release_quietly(items)
            raise
        else:
            self._attempt = 0
            self.handled_batches += 1
        finally:
            metrics.QUEUE_ITEMS.labels(self.queue.name, outcome).inc(len(items))

    async def _release_quietly(self, items: list[Item]) -> None:
        try:
            await self.queue.leases.release(
                self.queue.pool, self.worker_id, [item.id for item in items]
            )
        except Exception:
            # The lease expires on its own; nothing is lost if this fails.
            log.exception("%s: could not release %d items", self.queue.name, len(items))

    def _reap_finished(self) -> float:
        """Collect finished tasks; returns the back-off delay they ask for (0 if none).

        The tasks that failed since the last reap count as ONE failed attempt: with
        ``concurrency`` > 1, one provider outage fails every task in flight, and counting each
        of them would grow the back-off exponentially with the concurrency (8 tasks: 2^8 x base)
        instead of with the number of times the worker came back and failed again.
        """
        delay = 0.0
        attempt = self._attempt
        for task in [t for t in self._inflight if t.done()]:
            self._inflight.pop(task)
            if task.cancelled():
                continue
            exc = task.exception()
            if exc is None:
                continue
            retry_after = exc.retry_after if isinstance(exc, TransientError) else None
            wait = backoff_delay(attempt, self.config.backoff_base, self.config.backoff_max)
            if retry_after:
                wait = max(wait, retry_after)
            self._attempt = attempt + 1
            if isinstance(exc, TransientError):
                log.warning(
                    "%s: transient error, backing off %.1fs: %s", self.queue.name, wait, exc
                )
            else:
                log.error(
                    "%s: handler failed, backing off %.1fs", self.queue.name, wait, exc_info=exc
                )
            delay = max(delay, wait)
        return delay

    # -- the loop ----------------------------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        """Run until ``stop`` is set; then give in-flight work ``config.grace`` to commit."""
        wake: asyncio.Event | None = None
        if self.notifier is not None and self.queue.channel is not None:
            wake = self.notifier.subscribe(self.queue.channel)
        log.info("%s worker %s started", self.queue.name, self.worker_id)
        try:
            async with self.keeper.renewing(
                self.queue.leases, self.config.lease, self.worker_id, self.held
            ):
                try:
                    await self._loop(stop, wake)
                finally:
                    await self._shutdown()
        finally:
            if wake is not None and self.notifier is not None and self.queue.channel:
                self.notifier.unsubscribe(self.queue.channel, wake)
            log.info("%s worker %s stopped", self.queue.name, self.worker_id)

    async def _loop(self, stop: asyncio.Event, wake: asyncio.Event | None) -> None:
        cfg = self.config
        while not stop.is_set():
            delay = self._reap_finished()
            if delay:
                # A back-off: another batch finishing says nothing about the provider.
                await wait_any(stop.wait(), timeout=delay)
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
                wait = backoff_delay(self._attempt, min(cfg.backoff_base, 1.0), 10.0)
                self._attempt += 1
                log.warning("%s: claim failed (%s); retrying in %.1fs", self.queue.name, exc, wait)
                await wait_any(stop.wait(), timeout=wait)
                continue
            if not items:
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
