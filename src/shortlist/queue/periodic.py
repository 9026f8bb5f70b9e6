"""Periodic work of a process (the reaper with its retention purges, the model-migration
coordinator, the vector-index retune; in every process, the heap trim and the read replicas'
health checks) on one runner with one way of waiting: ``wait_any`` on
the stop event and the next job's due time, the worker loop's own wait.

A job runs as a task of its own when due (a slow one, such as an index rebuild, holds back
nobody else), never twice at once; the next run is due ``every`` seconds after the last one
started. A failed run is logged and the job runs again when next due: periodic work is
idempotent, its next round picks up what the failed one left. ``stop`` ends the wait at once;
runs in flight finish (they are short, or a thread that cannot be cut).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

import psycopg

from shortlist.queue.worker import wait_any

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Periodic:
    name: str
    every: float
    """Seconds between the starts of two runs (0 or less: the job is off)."""
    run: Callable[[], Awaitable[object]]
    first_after: float = 0.0
    """Seconds after the runner starts before the first run."""


async def _guarded(job: Periodic) -> None:
    try:
        await job.run()
    except (psycopg.Error, OSError) as exc:
        log.warning("%s failed (next in %.1fs): %s", job.name, job.every, exc)
    except Exception:
        log.exception("%s failed (next in %.1fs)", job.name, job.every)


def _forget(running: dict[str, asyncio.Task[None]], name: str, _task: object) -> None:
    running.pop(name, None)


async def run_periodic(jobs: Sequence[Periodic], stop: asyncio.Event) -> None:
    """Run ``jobs`` when due until ``stop`` is set."""
    jobs = [j for j in jobs if j.every > 0]
    if not jobs:
        return
    loop = asyncio.get_running_loop()
    due = {job.name: loop.time() + job.first_after for job in jobs}
    running: dict[str, asyncio.Task[None]] = {}
    try:
        while not stop.is_set():
            now = loop.time()
            for job in jobs:
                if due[job.name] <= now and job.name not in running:
                    due[job.name] = now + job.every
                    task = asyncio.create_task(_guarded(job), name=f"periodic:{job.name}")
                    running[job.name] = task
                    task.add_done_callback(functools.partial(_forget, running, job.name))
            # A job still running is due again once it ends (its task ends the wait).
            idle = [due[j.name] for j in jobs if j.name not in running]
            timeout = min(idle) - loop.time() if idle else None
            await wait_any(stop.wait(), *running.values(), timeout=timeout)
    finally:
        if running:
            await asyncio.gather(*running.values(), return_exceptions=True)
