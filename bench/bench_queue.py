"""queue: claim + complete rate of the shared queue primitive against pgqueuer and a bare loop.

These systems drain the same number of rows on the same PostgreSQL, with 1, 2 and 4 workers:

``shortlist``  :class:`shortlist.queue.QueueWorker` over a scratch table (the same shape as the
               product's queue tables: status + lease columns, a partial index on what is
               claimable), a :class:`ScratchQueue` whose claim is the lease CTE and whose
               handler is a no-op that completes the batch with one UPDATE. Batch 100,
               concurrency 2 (the next claim overlaps the last batch's completion, as
               pgqueuer's loop overlaps dequeue and its jobs), throttle 0, poll interval 10 ms,
               the product's connection pool, claims and completions on its one-statement
               (autocommit) connections.
``shortlist-serial``  the same with concurrency 1: claim, complete, claim, … (reported).
``bare``       the same two SQL statements, verbatim, in a tight loop on one autocommit
               connection: what a serial Python loop over this table can reach.
``pgqueuer``   pgqueuer's QueueManager (asyncpg driver, its fastest) with a no-op entrypoint,
               batch 100, drain mode: dequeue + ack (its batched status-log buffer).

Each worker is a separate OS process by default (``--queue-mode tasks`` runs them as asyncio
tasks of one process instead): on 2 cores a single Python process is GIL-bound, so processes
let every system use both cores. Workers are spawned once and kept for the whole benchmark;
for every run the parent resets the table, asks each worker to open its connections, then
releases all of them at once. A run's time is from the earliest worker start to the latest
worker end (each worker stops when a claim comes back empty / pgqueuer's drain mode ends).
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing as mp
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from multiprocessing.connection import Connection
from typing import Any, Protocol

import psycopg

from bench.common import Context, Record, Stat, profile_async
from shortlist.db.pool import single_statement

NAME = "queue"
TABLE = "bench_queue_items"
BATCH = 100
SYSTEMS = ("shortlist", "shortlist-serial", "bare", "pgqueuer")

# The shape of the backfill's candidate queue (search_candidates, migrations 0002/0005): a
# status machine queued → running → done with the lease columns, a partial index on what is
# claimable and one on running leases (the reaper's: a lost lease is failed forward by the
# reaper, not re-claimed). A claimed row leaves the claimable index, so concurrent claims do not
# step over rows in flight.
SCHEMA = f"""
CREATE TABLE IF NOT EXISTS {TABLE} (
    id           bigint PRIMARY KEY,
    status       text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'running', 'done')),
    locked_by    text,
    locked_until timestamptz,
    created_at   timestamptz NOT NULL DEFAULT now(),
    done_at      timestamptz
);
CREATE INDEX IF NOT EXISTS {TABLE}_claimable_idx ON {TABLE} (id) WHERE status = 'queued';
CREATE INDEX IF NOT EXISTS {TABLE}_running_idx ON {TABLE} (locked_until)
    WHERE status = 'running';
"""

# The product's claim shape (shortlist/talent/queries.sql, claim_candidates): a SKIP LOCKED CTE
# picks, the UPDATE moves the rows to running and stamps the lease, which outlives the
# transaction.
CLAIM = f"""
WITH claimable AS (
    SELECT id FROM {TABLE}
     WHERE status = 'queued'
     ORDER BY id
     LIMIT %(limit)s
       FOR UPDATE SKIP LOCKED
)
UPDATE {TABLE} AS t
   SET status = 'running',
       locked_by = %(worker_id)s,
       locked_until = now() + make_interval(secs => %(lease)s)
  FROM claimable
 WHERE t.id = claimable.id
RETURNING t.id
"""

# The bare loop's completion (the reference without the primitive).
COMPLETE = f"""
UPDATE {TABLE}
   SET status = 'done', done_at = now(), locked_by = NULL, locked_until = NULL
 WHERE id = ANY(%(ids)s) AND status = 'running' AND locked_by = %(worker_id)s
"""

# The benchmark table's outcome part (shortlist.queue.LeaseTable.outcome): a job done is
# completed by the worker's settle itself, one guarded statement per batch.
COMPLETED = """status = CASE WHEN o.kind = 'done' AND t.status = 'running' THEN 'done'
              ELSE t.status END,
done_at = CASE WHEN o.kind = 'done' THEN now() ELSE t.done_at END"""


# --- the systems (run inside a worker process or task) -------------------------------------


@dataclass(frozen=True)
class Target:
    url: str
    socket_dir: str
    database: str


class Runner(Protocol):
    def __init__(self, target: Target) -> None: ...
    async def open(self) -> None: ...
    async def run(self) -> int: ...
    async def close(self) -> None: ...


class _Job(int):
    """A claimed scratch row's id, as the worker sees items (``item.id``)."""

    @property
    def id(self) -> int:
        return int(self)


class ScratchQueue:
    """A :class:`shortlist.queue.Queue` over the scratch table; completing is the only work.

    ``stop`` is set when a claim comes back empty: the benchmark drains, then ends."""

    name = "bench"
    channel: str | None = None

    def __init__(self, pool: Any, stop: asyncio.Event) -> None:
        from shortlist.queue import LeaseTable

        self.pool = pool
        self.stop = stop
        # Given-back rows stay 'running' until their lease runs out; the benchmark never gives
        # any back.
        self.leases = LeaseTable(TABLE, outcome=COMPLETED)
        self.completed = 0

    async def claim(self, worker_id: str, limit: int, lease: float) -> list[int]:
        async with single_statement(self.pool) as conn:
            cur = await conn.execute(
                CLAIM, {"worker_id": worker_id, "limit": limit, "lease": lease}
            )
            rows = await cur.fetchall()
        if not rows:
            self.stop.set()
        return [_Job(r["id"]) for r in rows]

    async def handle(self, batch: Any) -> Any:
        from shortlist.queue import DONE

        # Nothing to write but the outcome, which the worker's settle records.
        self.completed += len(batch.items)
        return dict.fromkeys(batch.items, DONE)


class ShortlistRunner:
    concurrency = 2
    """Batches in flight per worker: the next claim overlaps the last batch's completion."""

    def __init__(self, target: Target) -> None:
        self.target = target

    async def open_pool(self) -> Any:
        from shortlist.db.pool import open_async_pool

        size = self.concurrency + 1  # a batch's handler each, plus the loop's next claim
        return await open_async_pool(self.target.url, min_size=size, max_size=size, name="bench")

    async def open(self) -> None:
        from shortlist.queue import QueueWorker, WorkerConfig

        self.pool = await self.open_pool()
        self.stop = asyncio.Event()
        self.queue = ScratchQueue(self.pool, self.stop)
        config = WorkerConfig(
            batch_size=BATCH,
            concurrency=self.concurrency,
            poll_interval=0.01,
            throttle=0.0,
            lease=300.0,
        )
        self.worker = QueueWorker(self.queue, config)

    async def run(self) -> int:
        await self.worker.run(self.stop)
        return self.queue.completed

    async def close(self) -> None:
        await self.pool.close()


class SerialRunner(ShortlistRunner):
    """The primitive strictly serial (``concurrency=1``): claim, complete, claim, … like the
    bare loop; reported next to the headline figures."""

    concurrency = 1


class BareRunner:
    def __init__(self, target: Target) -> None:
        self.target = target

    async def open(self) -> None:
        self.conn = await psycopg.AsyncConnection.connect(self.target.url, autocommit=True)
        self.worker_id = f"bare:{os.getpid()}:{id(self):x}"

    async def run(self) -> int:
        done = 0
        params: dict[str, Any] = {"worker_id": self.worker_id, "limit": BATCH, "lease": 300.0}
        while True:
            cur = await self.conn.execute(CLAIM, params)
            ids = [r[0] for r in await cur.fetchall()]
            if not ids:
                return done
            cur = await self.conn.execute(COMPLETE, {"ids": ids, "worker_id": self.worker_id})
            done += cur.rowcount

    async def close(self) -> None:
        await self.conn.close()


class PgqueuerRunner:
    def __init__(self, target: Target) -> None:
        self.target = target

    async def open(self) -> None:
        import asyncpg
        from pgqueuer.db import AsyncpgDriver
        from pgqueuer.qm import QueueManager
        from pgqueuer.queries import Queries

        self.conn = await asyncpg.connect(
            host=self.target.socket_dir, user="postgres", database=self.target.database
        )
        self.qm = QueueManager(Queries(AsyncpgDriver(self.conn)))
        self.done = 0

        @self.qm.entrypoint("noop")
        async def noop(job: Any) -> None:
            self.done += 1

    async def run(self) -> int:
        from pgqueuer.domain.types import QueueExecutionMode

        await self.qm.run(
            dequeue_timeout=timedelta(seconds=0.05),
            batch_size=BATCH,
            mode=QueueExecutionMode.drain,
        )
        return self.done

    async def close(self) -> None:
        await self.conn.close()


class NoCheckRunner(ShortlistRunner):
    """Diagnostic (``--queue-diagnose``): the product's pool without any ``check=`` (the
    product pings a connection idle for 2 s or more: what does the idle check itself cost?)."""

    async def open_pool(self) -> Any:
        from psycopg.rows import dict_row
        from psycopg_pool import AsyncConnectionPool

        from shortlist.db.pool import _reset_returned, configure_session

        pool: Any = AsyncConnectionPool(
            self.target.url,
            min_size=self.concurrency + 1,
            max_size=self.concurrency + 1,
            open=False,
            configure=configure_session,
            reset=_reset_returned,
            kwargs={"row_factory": dict_row, "autocommit": False},
        )
        await pool.open(wait=True, timeout=30)
        return pool


RUNNERS: dict[str, type[Runner]] = {
    "shortlist": ShortlistRunner,
    "shortlist-serial": SerialRunner,
    "bare": BareRunner,
    "pgqueuer": PgqueuerRunner,
    "shortlist-nocheck": NoCheckRunner,
}
DIAGNOSTIC_SYSTEMS = ("shortlist-nocheck",)


@dataclass(frozen=True)
class WorkerResult:
    rows: int
    start: float
    end: float


async def _timed(runner: Runner) -> WorkerResult:
    start = time.monotonic()
    rows = await runner.run()
    return WorkerResult(rows, start, time.monotonic())


# --- worker processes ----------------------------------------------------------------------------


def _child_main(conn: Connection) -> None:
    """A long-lived worker process: ``("open", system, target)`` → "ready", then ``"go"`` →
    its :class:`WorkerResult`; ``None`` ends it."""
    import logging

    logging.basicConfig(level=logging.WARNING)

    async def serve() -> None:
        loop = asyncio.get_running_loop()
        while True:
            message = await loop.run_in_executor(None, conn.recv)
            if message is None:
                return
            _, system, target = message
            runner = RUNNERS[system](target)
            await runner.open()
            conn.send("ready")
            go = await loop.run_in_executor(None, conn.recv)
            assert go == "go"
            try:
                result = await _timed(runner)
            finally:
                await runner.close()
            conn.send(result)

    asyncio.run(serve())


class ProcessWorkers:
    def __init__(self, n: int) -> None:
        ctx = mp.get_context("spawn")
        self.pipes: list[Connection] = []
        self.procs: list[Any] = []
        for _ in range(n):
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=_child_main, args=(child,), daemon=True)
            proc.start()
            self.pipes.append(parent)
            self.procs.append(proc)

    def run(self, system: str, target: Target, n: int) -> list[WorkerResult]:
        pipes = self.pipes[:n]
        for p in pipes:
            p.send(("open", system, target))
        for p in pipes:
            if p.recv() != "ready":
                raise RuntimeError("worker process failed to open")
        for p in pipes:
            p.send("go")
        results: list[WorkerResult] = [p.recv() for p in pipes]
        return results

    def close(self) -> None:
        for p in self.pipes:
            with contextlib.suppress(OSError, BrokenPipeError):
                p.send(None)
        for proc in self.procs:
            proc.join(10)
            if proc.is_alive():
                proc.terminate()


async def _run_tasks(system: str, target: Target, n: int) -> list[WorkerResult]:
    runners: list[Runner] = [RUNNERS[system](target) for _ in range(n)]
    for r in runners:
        await r.open()
    try:
        return list(await asyncio.gather(*(_timed(r) for r in runners)))
    finally:
        for r in runners:
            await r.close()


# --- table resets (parent) -----------------------------------------------------------------------


def _reset_scratch(url: str, rows: int) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(SCHEMA)
        conn.execute(f"TRUNCATE {TABLE}")
        conn.execute(f"INSERT INTO {TABLE} (id) SELECT g FROM generate_series(1, %s) AS g", (rows,))
        conn.execute(f"VACUUM ANALYZE {TABLE}")


async def _reset_pgqueuer_async(url: str, rows: int) -> None:
    from pgqueuer.db import PsycopgDriver
    from pgqueuer.queries import Queries

    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        queries = Queries(PsycopgDriver(conn))
        if not await queries.schema_is_installed():
            await queries.install()
        await conn.execute("TRUNCATE pgqueuer, pgqueuer_log, pgqueuer_statistics")
        chunk = 10_000
        for start in range(0, rows, chunk):
            n = min(chunk, rows - start)
            await queries.enqueue(["noop"] * n, [None] * n, [0] * n)
        await conn.execute("VACUUM ANALYZE pgqueuer")


def _reset(system: str, url: str, rows: int) -> None:
    if system == "pgqueuer":
        asyncio.run(_reset_pgqueuer_async(url, rows))
    else:
        _reset_scratch(url, rows)


def _check_drained(system: str, url: str, rows: int, results: Sequence[WorkerResult]) -> None:
    handled = sum(r.rows for r in results)
    with psycopg.connect(url, autocommit=True) as conn:
        if system == "pgqueuer":
            row = conn.execute("SELECT count(*) FROM pgqueuer").fetchone()
            left = row[0] if row else -1
        else:
            row = conn.execute(f"SELECT count(*) FROM {TABLE} WHERE status <> 'done'").fetchone()
            left = row[0] if row else -1
    if handled != rows or left != 0:
        raise RuntimeError(f"{system}: handled {handled} of {rows} rows, {left} left in the queue")


# --- the benchmark -------------------------------------------------------------------------------


def run(ctx: Context) -> list[Record]:
    rows = ctx.size(100_000, 2_000)
    worker_counts = (1,) if ctx.smoke else (1, 2, 4)
    mode = ctx.options.get("queue_mode") or ("tasks" if ctx.smoke else "processes")
    url = ctx.pg.create_database("bench_queue")
    target = Target(url, ctx.pg.socket_dir(), "bench_queue")
    ctx.log(f"queue: {rows:,} rows, workers {worker_counts}, {mode}, batch {BATCH}")

    diagnose = bool(ctx.options.get("queue_diagnose"))
    systems = SYSTEMS + (DIAGNOSTIC_SYSTEMS if diagnose else ())
    workers = ProcessWorkers(max(worker_counts)) if mode == "processes" else None

    def one_run(system: str, n: int, size: int) -> float:
        _reset(system, url, size)
        if workers is not None:
            results = workers.run(system, target, n)
        else:
            results = asyncio.run(_run_tasks(system, target, n))
        _check_drained(system, url, size, results)
        elapsed = max(r.end for r in results) - min(r.start for r in results)
        return size / elapsed

    rates: dict[tuple[str, int], list[float]] = {}
    try:
        # Warm-up: one untimed pass of every system (caches, plans, pgqueuer's schema).
        for system in systems:
            one_run(system, 1, min(rows, 10_000))
        for n in worker_counts:
            for rep in range(ctx.repetitions()):
                # Interleaved, so a drift of the machine hits every system alike.
                for system in systems:
                    rate = one_run(system, n, rows)
                    rates.setdefault((system, n), []).append(rate)
                    ctx.log(f"queue: {system:9s} {n} worker(s) rep {rep + 1}: {rate:,.0f} rows/s")
    finally:
        if workers is not None:
            workers.close()

    records: list[Record] = []
    for n in worker_counts:
        mine = Stat.of(rates[("shortlist", n)])
        label = f"{n} worker{'s' if n > 1 else ''}"
        records.append(
            Record(
                NAME,
                f"claim+complete rate vs pgqueuer, {label}",
                mine,
                Stat.of(rates[("pgqueuer", n)]),
                target=3.0,
                unit="rows/s",
                baseline_name="pgqueuer",
                note=f"{rows:,} rows, batch {BATCH}, concurrency 2, {mode}",
            )
        )
        records.append(
            Record(
                NAME,
                f"claim+complete rate vs bare SQL loop, {label}",
                mine,
                Stat.of(rates[("bare", n)]),
                target=0.7,
                unit="rows/s",
                baseline_name="bare loop",
                note=f"{rows:,} rows, batch {BATCH}, concurrency 2, {mode}",
            )
        )
        serial = Stat.of(rates[("shortlist-serial", n)])
        for baseline, name in (("pgqueuer", "pgqueuer"), ("bare", "bare SQL loop")):
            records.append(
                Record(
                    NAME,
                    f"concurrency 1 (serial) vs {name}, {label}",
                    serial,
                    Stat.of(rates[(baseline, n)]),
                    unit="rows/s",
                    baseline_name=name,
                    note="the primitive with one batch in flight per worker",
                )
            )
        for system in DIAGNOSTIC_SYSTEMS if diagnose else ():
            records.append(
                Record(
                    NAME,
                    f"diagnostic {system} vs bare SQL loop, {label}",
                    Stat.of(rates[(system, n)]),
                    Stat.of(rates[("bare", n)]),
                    unit="rows/s",
                    baseline_name="bare loop",
                    note="not the product: its pool without the idle check",
                )
            )
    if ctx.profiles_enabled and (any(r.met is False for r in records)):
        size = min(rows, 20_000)
        _reset("shortlist", url, size)
        ctx.log("queue: a target was missed; profiling one in-process shortlist worker")
        asyncio.run(
            profile_async(ctx, NAME, lambda: _run_tasks("shortlist", target, 1)),
        )
    return records
