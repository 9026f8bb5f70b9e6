"""The run loop every queue worker uses (the seed's ``EmbedIndexerWorker::run``, generalised).

    loop:
        items = claim(batch)                  # SKIP LOCKED + lease, own transaction
        if items: handle(items)               # never cancelled once started
        wait(throttle | poll interval | NOTIFY | stop)   # the only cancellable await

As in the seed, the work happens *outside* the select: a stop request only ever cancels the
idle wait, so a batch that has started always finishes and commits (or rolls back) whole.
A plain cancellation of ``run`` does not cut work either. The one exception is the end of the
shutdown grace period (``SHORTLIST_SHUTDOWN_GRACE``): ``run`` cancelled with the message
:data:`GRACE_OVER` (``shortlist.runtime`` does that) cancels the batches still in flight — a
provider call hanging for minutes — whose transactions roll back and whose items are handed
back (released), so the process exits on time and nothing stays claimed.
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
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

import psycopg

from shortlist import metrics
from shortlist.errors import TransientError
from shortlist.queue.notify import Notifier

log = logging.getLogger(__name__)

Item = TypeVar("Item")

GRACE_OVER = "shortlist: shutdown grace period over"
"""``task.cancel(GRACE_OVER)``: the only cancellation of ``run`` that cancels work in flight."""
RELEASE_TIMEOUT = 5.0
"""Seconds a batch cancelled at the end of the shutdown grace may take to release its items."""


def _grace_over(exc: asyncio.CancelledError) -> bool:
    return GRACE_OVER in exc.args


class Queue(Protocol[Item]):
    """What a pipeline provides to run on the primitive."""

    name: str
    channel: str | None
    """NOTIFY channel that signals new work (``None``: poll only)."""

    async def claim(self, worker_id: str, limit: int, lease: float) -> list[Item]:
        """Claim up to ``limit`` items (SKIP LOCKED + lease) in a committed transaction."""
        ...

    async def handle(self, worker_id: str, items: list[Item]) -> None:
        """Do the work and commit it. Raise ``TransientError`` to release and back off."""
        ...

    async def heartbeat(self, worker_id: str, items: Sequence[Item], lease: float) -> None:
        """Extend the lease of items still being worked on."""
        ...

    async def release(self, worker_id: str, items: Sequence[Item]) -> None:
        """Give items back unchanged."""
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
    lease: float = 300.0
    """Seconds a claim stays valid without a heartbeat."""


def backoff_delay(attempt: int, base: float, cap: float) -> float:
    """The seed's schedule: ``base × 2^attempt``, capped (30 s, 60 s, 120 s, 120 s, …)."""
    if attempt < 0:
        raise ValueError("attempt must be >= 0")
    return float(min(cap, base * (2 ** min(attempt, 32))))


def new_worker_id(queue_name: str) -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{queue_name}:{uuid.uuid4().hex[:8]}"


class QueueWorker(Generic[Item]):
    def __init__(
        self,
        queue: Queue[Item],
        config: WorkerConfig,
        *,
        notifier: Notifier | None = None,
        worker_id: str | None = None,
    ) -> None:
        self.queue = queue
        self.config = config
        self.notifier = notifier
        self.worker_id = worker_id or new_worker_id(queue.name)
        self._inflight: dict[asyncio.Task[None], list[Item]] = {}
        self._attempt = 0
        self._wake = asyncio.Event()
        self.handled_batches = 0

    # -- waiting ------------------------------------------------------------------------------

    async def _wait(
        self,
        seconds: float,
        stop: asyncio.Event,
        *,
        wake_on_notify: bool,
        wake_on_slot: bool = False,
    ) -> None:
        """Sleep up to ``seconds``; end early on stop, (when ``wake_on_notify``) on a NOTIFY,
        and (when ``wake_on_slot``) when an in-flight task finishes. This is the only await a
        stop request cancels.

        Throttle and back-off waits must not wake on a finished task: a task that is done but
        not yet reaped would end them at once (that made the throttle a no-op), and another
        batch finishing says nothing about whether the provider has recovered.
        """
        waiters: list[asyncio.Future[object]] = [asyncio.ensure_future(stop.wait())]
        if wake_on_notify:
            waiters.append(asyncio.ensure_future(self._wake.wait()))
        if wake_on_slot:
            waiters.extend(self._inflight)  # type: ignore[arg-type]
        try:
            await asyncio.wait(waiters, timeout=max(seconds, 0.0), return_when="FIRST_COMPLETED")
        finally:
            for w in waiters[: 2 if wake_on_notify else 1]:
                w.cancel()
        if wake_on_notify:
            self._wake.clear()

    # -- work ------------------------------------------------------------------------------------

    async def _handle(self, items: list[Item]) -> None:
        try:
            await self.queue.handle(self.worker_id, items)
        except asyncio.CancelledError:
            # Only at the end of the shutdown grace period (GRACE_OVER): whatever
            # was not committed rolled back with its transaction; give the items back now
            # rather than when their lease runs out.
            metrics.QUEUE_ITEMS.labels(self.queue.name, "cancelled").inc(len(items))
            await self._release_quietly(items)
            raise
        except TransientError:
            metrics.QUEUE_BACKOFFS.labels(self.queue.name).inc()
            metrics.QUEUE_ITEMS.labels(self.queue.name, "transient").inc(len(items))
            await self._release_quietly(items)
            raise
        except Exception:
            metrics.QUEUE_ITEMS.labels(self.queue.name, "error").inc(len(items))
            await self._release_quietly(items)
            raise
        else:
            self._attempt = 0
            self.handled_batches += 1
            metrics.QUEUE_ITEMS.labels(self.queue.name, "handled").inc(len(items))

    async def _release_quietly(self, items: list[Item]) -> None:
        try:
            await self.queue.release(self.worker_id, items)
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

    async def _heartbeat_loop(self) -> None:
        every = max(self.config.lease / 3.0, 0.05)
        while True:
            await asyncio.sleep(every)
            items = [item for batch in self._inflight.values() for item in batch]
            if items:
                try:
                    await self.queue.heartbeat(self.worker_id, items, self.config.lease)
                except Exception as exc:
                    log.warning("%s: heartbeat failed: %s", self.queue.name, exc)

    # -- the loop ----------------------------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        """Run until ``stop`` is set; then wait for in-flight work to commit and return."""
        cfg = self.config
        wake_event: asyncio.Event | None = None
        if self.notifier is not None and self.queue.channel is not None:
            wake_event = self.notifier.subscribe(self.queue.channel)
        relay = asyncio.create_task(self._relay(wake_event)) if wake_event else None
        heartbeat = asyncio.create_task(self._heartbeat_loop())
        log.info("%s worker %s started", self.queue.name, self.worker_id)
        try:
            while not stop.is_set():
                delay = self._reap_finished()
                if delay:
                    await self._wait(delay, stop, wake_on_notify=False)
                    continue
                free = cfg.concurrency - len(self._inflight)
                if free <= 0:
                    await self._wait(
                        cfg.poll_interval, stop, wake_on_notify=False, wake_on_slot=True
                    )
                    continue
                try:
                    items = await self.queue.claim(self.worker_id, cfg.batch_size, cfg.lease)
                except (psycopg.Error, OSError) as exc:
                    wait = backoff_delay(self._attempt, min(cfg.backoff_base, 1.0), 10.0)
                    self._attempt += 1
                    log.warning(
                        "%s: claim failed (%s); retrying in %.1fs", self.queue.name, exc, wait
                    )
                    await self._wait(wait, stop, wake_on_notify=False)
                    continue
                if not items:
                    await self._wait(cfg.poll_interval, stop, wake_on_notify=True)
                    continue
                metrics.QUEUE_CLAIMS.labels(self.queue.name).inc()
                # The task is never cancelled by a stop request: it runs to its commit.
                task = asyncio.create_task(self._handle(items))
                self._inflight[task] = items
                if cfg.concurrency == 1:
                    await asyncio.wait([task])
                    if task.cancelled() or task.exception() is not None:
                        continue  # back off (top of the loop) instead of throttling first
                if cfg.throttle > 0:
                    await self._wait(cfg.throttle, stop, wake_on_notify=False)
        except asyncio.CancelledError as exc:
            if _grace_over(exc):
                await self._cancel_inflight()
            raise
        finally:
            await self._drain()
            heartbeat.cancel()
            if relay is not None:
                relay.cancel()
            if wake_event is not None and self.notifier is not None and self.queue.channel:
                self.notifier.unsubscribe(self.queue.channel, wake_event)
            log.info("%s worker %s stopped", self.queue.name, self.worker_id)

    async def _drain(self) -> None:
        """Let every started batch finish. Shielded: neither a stop request nor a plain
        cancellation of ``run`` cuts work; a cancellation with :data:`GRACE_OVER` does."""
        cancelled = False
        while self._inflight:
            pending = list(self._inflight)
            try:
                await asyncio.shield(asyncio.wait(pending))
            except asyncio.CancelledError as exc:
                cancelled = True
                if _grace_over(exc):
                    await self._cancel_inflight()
            self._reap_finished()
        if cancelled:
            raise asyncio.CancelledError

    async def _cancel_inflight(self) -> None:
        """Cancel the batches still running and wait (briefly) while they hand their items
        back; a batch that cannot even do that leaves them to its lease."""
        tasks = list(self._inflight)
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

    async def _relay(self, source: asyncio.Event) -> None:
        while True:
            await source.wait()
            source.clear()
            self._wake.set()
