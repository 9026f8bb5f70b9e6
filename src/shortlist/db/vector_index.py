"""HNSW indexes on embedding columns: half-precision, built CONCURRENTLY, sized from the table.

**Why halfvec, and only in the index.** The columns stay ``vector(384)`` (float4); the HNSW
graph indexes the expression ``embedding::halfvec(384)``. The graph is what an index build
holds in memory and what a search walks, and at half precision both are about half the size
(1M listings: ~0.75 GB of vectors in the graph instead of ~1.5 GB), while the float4 column
keeps every distance that is shown or scored exact (search.sql computes ``distance`` on the
column). Converting the column would rewrite the table under an exclusive lock: minutes of
blocked writes at a million rows. bench/bench_search.py measures the recall this costs.

**Why CONCURRENTLY.** A plain CREATE INDEX blocks every write to the table for the whole build
(minutes at 1M rows); CONCURRENTLY lets searches and writes go on, for two table scans instead
of one. It cannot run inside a transaction, so builds run here, on an autocommit connection,
and not in a numbered migration (each of those is one transaction).

**Settings from the table size** (:func:`plan_build`, logged once per build, each overridable
by an environment variable, see :class:`BuildOverrides`):

* ``maintenance_work_mem``: enough for the whole graph, so the build stays on pgvector's fast
  in-memory path (past it, the build goes on disk and takes many times longer), capped at a
  quarter of this machine's memory;
* parallel workers: one per core beyond the leader's, none for small tables;
* ``ef_construction``: 128 up to :data:`LARGE_TABLE_ROWS`, 64 above it, where build time
  grows faster than recall (bench/README.md has the measurements).

``m`` stays 16 at every size: at a million rows ``m`` 24 took the build from 570 s to 1,111 s
on this project's 2-core machine (twice its 10-minute budget) for recall@10 0.979 instead of
0.963 at ``hnsw.ef_search`` 1000 (``shortlist.db.vector_search``), still short of 0.98.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, LiteralString

import psutil
from psycopg import Connection, sql
from psycopg.rows import tuple_row

from shortlist.db.sql import load_queries

log = logging.getLogger(__name__)

QUERIES = load_queries("shortlist.db", "vector_index.sql")

HNSW_M = 16
EF_CONSTRUCTION_SMALL = 128
EF_CONSTRUCTION_LARGE = 64
LARGE_TABLE_ROWS = 500_000
"""Tables above this many rows are built with :data:`EF_CONSTRUCTION_LARGE`."""
PARALLEL_MIN_ROWS = 50_000
"""Below this the build takes seconds and parallel workers are not worth their start-up."""
MIN_BUILD_MEMORY_MB = 64
MEMORY_SHARE = 0.25
"""Most of this machine's memory a build may claim by default."""
ELEMENT_OVERHEAD_BYTES = 720
"""Graph memory per element besides its vector (neighbour lists at m = 16, element header,
heap pointers); fitted to pgvector's "graph no longer fits" notice at 100k rows."""
MEMORY_HEADROOM = 1.2


@dataclass(frozen=True)
class BuildOverrides:
    """Operator's overrides of :func:`plan_build` (``None``: sized from the table)."""

    memory_mb: int | None = None
    workers: int | None = None
    ef_construction: int | None = None


@dataclass(frozen=True)
class BuildPlan:
    rows: int
    m: int
    ef_construction: int
    memory_mb: int
    workers: int

    def describe(self) -> str:
        return (
            f"{self.rows:,} rows: m={self.m} ef_construction={self.ef_construction}"
            f" maintenance_work_mem={self.memory_mb}MB parallel workers={self.workers}"
        )


@dataclass(frozen=True)
class VectorIndex:
    """An HNSW index on an embedding expression, cosine distance."""

    table: str
    name: str
    column_expr: str
    """The indexed expression; queries must order by exactly this expression to use it."""
    dim: int
    opclass: str = "halfvec_cosine_ops"
    replaces: str | None = None
    """An index this one supersedes: dropped (CONCURRENTLY) once this one is valid."""
    bytes_per_value: int = 2
    """2 for halfvec, 4 for vector."""


@dataclass(frozen=True)
class BuildReport:
    index: VectorIndex
    plan: BuildPlan
    seconds: float
    index_bytes: int


def halfvec_expr(column: str, dim: int) -> str:
    """The half-precision expression of an embedding column (the typmod is required: an HNSW
    index needs the dimension)."""
    return f"{column}::halfvec({dim})"


def index_name(table: str, column: str) -> str:
    """The HNSW index of an embedding column (one per model space and corpus)."""
    return f"{table}_{column}_halfvec_idx"


CORPUS_TABLES = ("job_listings", "candidates")


def space_indexes(column: str, dim: int) -> tuple[VectorIndex, ...]:
    """The indexes search.sql and talent/queries.sql are written against, for the model space
    whose vectors are in ``column`` (shortlist.embedding.spaces). The first space's replace the
    float4 indexes of the first migrations."""
    return tuple(
        VectorIndex(
            table,
            index_name(table, column),
            halfvec_expr(column, dim),
            dim,
            replaces=f"{table}_embedding_hnsw_idx" if column == "embedding" else None,
        )
        for table in CORPUS_TABLES
    )


SEARCH_INDEXES = space_indexes("embedding", 384)
"""The first model space's indexes, at the dimension of migration 0001."""


def active_space_indexes(conn: Conn) -> tuple[VectorIndex, ...]:
    """The indexes of the active model space (``embedding_models``, migration 0013)."""
    with conn.cursor(row_factory=tuple_row) as cur:
        row = cur.execute(QUERIES["active_space"]).fetchone()
    if row is None:
        return SEARCH_INDEXES
    return space_indexes(str(row[0]), int(row[1]))


def graph_bytes(rows: int, dim: int, bytes_per_value: int = 2) -> int:
    """Estimated memory of the in-memory HNSW graph of ``rows`` elements."""
    return rows * (dim * bytes_per_value + 8 + ELEMENT_OVERHEAD_BYTES)


def plan_build(
    rows: int,
    dim: int,
    overrides: BuildOverrides = BuildOverrides(),
    *,
    bytes_per_value: int = 2,
    memory_cap_mb: int | None = None,
    cores: int | None = None,
) -> BuildPlan:
    """Build settings for a table of ``rows`` embedded rows (see the module docstring)."""
    if memory_cap_mb is None:
        memory_cap_mb = int(psutil.virtual_memory().total * MEMORY_SHARE) >> 20
    if cores is None:
        cores = os.cpu_count() or 1
    needed_mb = int(graph_bytes(rows, dim, bytes_per_value) * MEMORY_HEADROOM) >> 20
    memory_mb = max(MIN_BUILD_MEMORY_MB, min(memory_cap_mb, needed_mb))
    workers = 0 if rows < PARALLEL_MIN_ROWS else max(0, min(cores - 1, 7))
    ef = EF_CONSTRUCTION_SMALL if rows <= LARGE_TABLE_ROWS else EF_CONSTRUCTION_LARGE
    return BuildPlan(
        rows=rows,
        m=HNSW_M,
        ef_construction=overrides.ef_construction or ef,
        memory_mb=overrides.memory_mb or memory_mb,
        workers=overrides.workers if overrides.workers is not None else workers,
    )


Conn = Connection[Any]
"""Any sync connection, whatever its row factory (migrate's returns tuples)."""


def _one(conn: Conn, query: sql.Composed | LiteralString, params: dict[str, object]) -> Any:
    with conn.cursor(row_factory=tuple_row) as cur:
        row = cur.execute(query, params).fetchone()
    return None if row is None else row[0]


def index_is_valid(conn: Conn, name: str) -> bool | None:
    """True / False for a valid / invalid index, None when there is none."""
    valid = _one(conn, QUERIES["index_state"], {"index": name})
    return None if valid is None else bool(valid)


def table_rows(conn: Conn, table: str) -> int:
    """The planner's estimate when there is one, else an exact count."""
    estimate = _one(conn, QUERIES["estimated_rows"], {"table": table})
    if isinstance(estimate, int) and estimate >= 0:
        return estimate
    count = sql.SQL(QUERIES["count_rows"]).format(table=sql.Identifier(table))
    return int(_one(conn, count, {}) or 0)


def drop_index(conn: Conn, name: str) -> None:
    conn.execute(sql.SQL(QUERIES["drop_index"]).format(index=sql.Identifier(name)))


def build_hnsw(
    conn: Conn,
    table: str,
    column_expr: str,
    dim: int,
    *,
    name: str,
    opclass: str = "halfvec_cosine_ops",
    overrides: BuildOverrides = BuildOverrides(),
    bytes_per_value: int = 2,
) -> BuildReport | None:
    """Build the HNSW index ``name`` on ``table (column_expr)`` CONCURRENTLY, with settings
    sized from the table; None when a valid index of that name exists already. ``conn`` must
    be in autocommit mode. An invalid leftover of an interrupted build is dropped first."""
    index = VectorIndex(table, name, column_expr, dim, opclass, bytes_per_value=bytes_per_value)
    if not conn.autocommit:
        raise ValueError("CREATE INDEX CONCURRENTLY needs an autocommit connection")
    state = index_is_valid(conn, name)
    if state is False:
        log.warning("dropping invalid index %s (an interrupted build)", name)
        drop_index(conn, name)
    elif state:
        return None
    plan = plan_build(table_rows(conn, table), dim, overrides, bytes_per_value=bytes_per_value)
    log.info("building HNSW index %s on %s, %s", name, table, plan.describe())
    create = sql.SQL(QUERIES["create_index"]).format(
        index=sql.Identifier(name),
        table=sql.Identifier(table),
        # Constants of this package's callers, never user input.
        expr=sql.SQL(column_expr),
        opclass=sql.SQL(opclass),
        m=sql.Literal(plan.m),
        ef_construction=sql.Literal(plan.ef_construction),
    )
    conn.execute(
        QUERIES["set_build_memory"],
        {"memory": f"{plan.memory_mb}MB", "workers": str(plan.workers)},
    )
    started = time.perf_counter()
    try:
        conn.execute(create)
    finally:
        conn.execute(QUERIES["reset_build_settings"])
    seconds = time.perf_counter() - started
    size = _index_bytes(conn, name)
    log.info("built HNSW index %s in %.1f s (%.0f MB)", name, seconds, size / 2**20)
    return BuildReport(index, plan, seconds, size)


def _index_bytes(conn: Conn, name: str) -> int:
    return int(_one(conn, QUERIES["index_bytes"], {"index": name}) or 0)


def build_index(
    conn: Conn, index: VectorIndex, overrides: BuildOverrides = BuildOverrides()
) -> BuildReport | None:
    """:func:`build_hnsw` of a declared index."""
    return build_hnsw(
        conn,
        index.table,
        index.column_expr,
        index.dim,
        name=index.name,
        opclass=index.opclass,
        overrides=overrides,
        bytes_per_value=index.bytes_per_value,
    )


def ensure_vector_indexes(
    conn: Conn,
    indexes: Sequence[VectorIndex] = SEARCH_INDEXES,
    overrides: BuildOverrides = BuildOverrides(),
) -> list[BuildReport]:
    """Build every index of ``indexes`` that is missing or invalid, then drop what each one
    replaces; returns the builds made. Idempotent: a second call finds nothing to do."""
    built: list[BuildReport] = []
    for index in indexes:
        report = build_index(conn, index, overrides)
        if report is not None:
            built.append(report)
        if index.replaces and index_is_valid(conn, index.replaces) is not None:
            log.info("dropping %s, superseded by %s", index.replaces, index.name)
            drop_index(conn, index.replaces)
    return built
