"""Vector indexes on embedding columns: half-precision, HNSW or IVFFlat by the table's size,
built CONCURRENTLY, sized from the table, retuned when the table outgrows them.

**Why halfvec, and only in the index.** The columns stay ``vector(384)`` (float4); the index
covers the expression ``embedding::halfvec(384)``. The index is what a build holds in memory and
what a search reads, and at half precision both are about half the size (1M listings: ~0.75 GB
of vectors instead of ~1.5 GB), while the float4 column keeps every distance that is shown or
scored exact (search.sql computes ``distance`` on the column). Converting the column would
rewrite the table under an exclusive lock: minutes of blocked writes at a million rows.
bench/bench_search.py measures the recall this costs (none that re-ranking would win back).

**Why two methods.** pgvector has two indexes (github.com/pgvector/pgvector, README, sections
"HNSW" and "IVFFlat"), and on this project's benchmark each wins at one end of the size range
(bench/README.md has the measurements, 2-core machine):

* **HNSW** up to :data:`IVFFLAT_MIN_ROWS`: the fastest searches (a 100k-row search walks the
  graph in a few milliseconds at recall@10 ≥ 0.998), no training, and it is good from the
  first row, so an empty table that fills up is served well all along. But its build grows
  faster than the table (each insert searches a larger graph) and so does the search effort
  for a given recall: at a million rows the graph that builds in 10 minutes here (``m`` 16,
  ``ef_construction`` 64: 570 s) reaches recall@10 0.963 at pgvector's longest candidate list,
  and ``m`` 24 (1,111 s) 0.979.
* **IVFFlat** above it: k-means on a sample picks :func:`ivfflat_lists` centres, every row goes
  to the list of its nearest centre, and a search reads the rows of the
  ``shortlist.db.vector_search.IVFFLAT_PROBES`` lists nearest the query. At a million rows it
  builds in 42–44 s and reaches recall@10 0.99 (unfiltered, 10 % and 1 % filters) with a
  bare statement of 30–40 ms. Up to a million rows a list holds about 1,000 rows, so a search
  reads about 50,000 whatever the size; above, lists grow as √rows (pgvector's advice, which
  bounds the build's row-by-centre comparisons), so a search reads more rows and takes longer,
  while recall holds. Its weakness is that the centres are fixed at the build: an index whose
  table has since grown (or shrunk) twofold is rebuilt (:func:`needs_retune`,
  ``shortlist.indexer.retune``).

**Why CONCURRENTLY.** A plain CREATE INDEX blocks every write to the table for the whole build;
CONCURRENTLY lets searches and writes go on, for two table scans instead of one. It cannot run
inside a transaction, so builds run here, on an autocommit connection, and not in a numbered
migration (each of those is one transaction).

**Settings from the table size** (:func:`plan_build`, logged once per build, each overridable
by an environment variable, see :class:`BuildOverrides`):

* the method, above;
* ``maintenance_work_mem``: enough for the whole HNSW graph, or for IVFFlat's k-means sample and
  the sort that writes its lists, so the build stays in memory (an HNSW graph past it goes on
  disk and takes many times longer), capped at a quarter of this machine's memory;
* parallel workers: one per core beyond the leader's, none for small tables;
* HNSW ``ef_construction``: 128 up to :data:`LARGE_TABLE_ROWS`, 64 above (where HNSW is asked
  for by name: build time grows faster than recall); ``m`` 16 at every size;
* IVFFlat lists: :func:`ivfflat_lists`.
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, LiteralString

import psutil
from psycopg import Connection, sql
from psycopg.rows import dict_row, tuple_row

from shortlist.db.pool import connect
from shortlist.db.sql import compose, load_queries
from shortlist.db.types import AsyncConn

log = logging.getLogger(__name__)

QUERIES = load_queries("shortlist.db", "vector_index.sql")

Method = Literal["hnsw", "ivfflat"]
HNSW: Method = "hnsw"
IVFFLAT: Method = "ivfflat"
METHODS: tuple[Method, ...] = (HNSW, IVFFLAT)

HNSW_M = 16
EF_CONSTRUCTION_SMALL = 128
EF_CONSTRUCTION_LARGE = 64
LARGE_TABLE_ROWS = 500_000
"""HNSW builds of tables above this many rows use :data:`EF_CONSTRUCTION_LARGE`."""
IVFFLAT_MIN_ROWS = 500_000
"""Tables above this many rows get an IVFFlat index, smaller ones HNSW. An IVFFlat index stays
IVFFlat until the table is below half of this (so a table near the line does not flip)."""
IVFFLAT_ROWS_PER_LIST = 1000
"""pgvector's advice: ``rows / 1000`` lists up to a million rows, ``sqrt(rows)`` above."""
IVFFLAT_MAX_LISTS = 32768
"""pgvector's maximum."""
IVFFLAT_SAMPLES_PER_LIST = 50
"""k-means sample rows per list (pgvector's ivfbuild.c), for the build memory."""
RETUNE_FACTOR = 2.0
"""An IVFFlat index whose list count is this far (either way) from the table's plan no longer
fits (:func:`needs_retune`): its lists hold twice (or half) the rows the searches were tuned
for. ``shortlist.indexer.retune`` or ``shortlist migrate --retune`` rebuilds it."""
PARALLEL_MIN_ROWS = 50_000
"""Below this the build takes seconds and parallel workers are not worth their start-up."""
MIN_BUILD_MEMORY_MB = 64
MEMORY_SHARE = 0.25
"""Most of this machine's memory a build may claim by default."""
ELEMENT_OVERHEAD_BYTES = 720
"""Graph memory per element besides its vector (neighbour lists at m = 16, element header,
heap pointers); fitted to pgvector's "graph no longer fits" notice at 100k rows."""
SORT_OVERHEAD_BYTES = 64
"""IVFFlat build sort memory per row besides its vector (tuple header, list number, TID)."""
MEMORY_HEADROOM = 1.2
NEXT_SUFFIX = "_next"
"""A rebuild's new index is built under its final name plus this, while the old one serves."""


def vector_text(vector: Sequence[float]) -> str:
    """A vector as pgvector's text form (``[1.0,2.0]``), for statements that cast a text array
    (``%(vectors)s::text[]`` … ``::vector``) to pass many vectors in one parameter."""
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


@dataclass(frozen=True)
class BuildOverrides:
    """Operator's overrides of :func:`plan_build` (``None``: sized from the table)."""

    memory_mb: int | None = None
    workers: int | None = None
    ef_construction: int | None = None
    method: Method | None = None
    ivfflat_lists: int | None = None


NO_OVERRIDES = BuildOverrides()


@dataclass(frozen=True)
class BuildPlan:
    rows: int
    method: Method
    memory_mb: int
    workers: int
    m: int = HNSW_M
    ef_construction: int = EF_CONSTRUCTION_SMALL
    lists: int = 0
    """IVFFlat lists (0 for HNSW)."""

    def describe(self) -> str:
        shape = (
            f"lists={self.lists}"
            if self.method == IVFFLAT
            else f"m={self.m} ef_construction={self.ef_construction}"
        )
        return (
            f"{self.rows:,} rows: {self.method} {shape}"
            f" maintenance_work_mem={self.memory_mb}MB parallel workers={self.workers}"
        )


@dataclass(frozen=True)
class VectorIndex:
    """The vector index of one embedding column of one corpus table, on its half-precision
    expression, cosine distance: HNSW under :attr:`name`, IVFFlat under :attr:`ivfflat_name`
    (one of the two exists once built)."""

    table: str
    column: str
    """The embedding column: the build is sized from the rows that have a vector in it (a
    table still being embedded has many without)."""
    dim: int
    replaces: str | None = None
    """An index this one supersedes: dropped (CONCURRENTLY) once this one is valid."""

    opclass = "halfvec_cosine_ops"
    bytes_per_value = 2
    """Half precision."""

    @property
    def name(self) -> str:
        return index_name(self.table, self.column)

    @property
    def ivfflat_name(self) -> str:
        return ivfflat_index_name(self.table, self.column)

    @property
    def column_expr(self) -> str:
        """The indexed expression; queries must order by exactly this expression to use it."""
        return halfvec_expr(self.column, self.dim)

    def name_for(self, method: Method) -> str:
        return self.name if method == HNSW else self.ivfflat_name

    def physical_names(self) -> list[str]:
        """Every name an index of this one may have: each method's, and each rebuild's."""
        names = [self.name_for(m) for m in METHODS]
        return names + [n + NEXT_SUFFIX for n in names]


@dataclass(frozen=True)
class PhysicalIndex:
    """An index of a :class:`VectorIndex` as the catalog has it."""

    name: str
    method: Method
    valid: bool
    lists: int


@dataclass(frozen=True)
class BuildReport:
    index: VectorIndex
    plan: BuildPlan
    seconds: float
    index_bytes: int
    name: str = ""
    """The index built (its final name)."""


def halfvec_expr(column: str, dim: int) -> str:
    """The half-precision expression of an embedding column (the typmod is required: a vector
    index needs the dimension)."""
    return f"{column}::halfvec({dim})"


def index_name(table: str, column: str) -> str:
    """The HNSW index of an embedding column (one per model space and corpus)."""
    return f"{table}_{column}_halfvec_idx"


def ivfflat_index_name(table: str, column: str) -> str:
    """The IVFFlat index of an embedding column (in place of its HNSW index on large tables)."""
    return f"{table}_{column}_ivfflat_idx"


CORPUS_TABLES = ("job_listings", "candidates")


def space_indexes(column: str, dim: int) -> tuple[VectorIndex, ...]:
    """The indexes search.sql and talent/queries.sql are written against, for the model space
    whose vectors are in ``column`` (shortlist.embedding.spaces). The first space's replace the
    float4 indexes of the first migrations."""
    return tuple(
        VectorIndex(
            table,
            column,
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


def ivfflat_lists(rows: int) -> int:
    """pgvector's advice for the number of lists: ``rows / 1000`` up to a million rows,
    ``sqrt(rows)`` above (the build compares every row with every centre)."""
    lists = rows // IVFFLAT_ROWS_PER_LIST if rows <= 1_000_000 else math.isqrt(rows)
    return max(1, min(IVFFLAT_MAX_LISTS, lists))


def ivfflat_build_bytes(rows: int, lists: int, dim: int, bytes_per_value: int = 2) -> int:
    """Estimated memory of an IVFFlat build: the k-means sample (float4), the centres, and the
    sort of every row by list."""
    samples = min(rows, lists * IVFFLAT_SAMPLES_PER_LIST)
    kmeans = samples * dim * 4 + 3 * lists * dim * 4 + lists * lists * 4
    return kmeans + rows * (dim * bytes_per_value + SORT_OVERHEAD_BYTES)


def planned_method(rows: int, current: Method | None = None) -> Method:
    """HNSW up to :data:`IVFFLAT_MIN_ROWS`, IVFFlat above; an IVFFlat index stays until the
    table is below half of that."""
    if rows > IVFFLAT_MIN_ROWS:
        return IVFFLAT
    if current == IVFFLAT and rows > IVFFLAT_MIN_ROWS // 2:
        return IVFFLAT
    return HNSW


def plan_build(
    rows: int,
    dim: int,
    overrides: BuildOverrides = NO_OVERRIDES,
    *,
    current: Method | None = None,
    bytes_per_value: int = 2,
    memory_cap_mb: int | None = None,
    cores: int | None = None,
) -> BuildPlan:
    """Build settings for a table of ``rows`` embedded rows (see the module docstring);
    ``current``: the method of the index there is now, if any."""
    if memory_cap_mb is None:
        memory_cap_mb = int(psutil.virtual_memory().total * MEMORY_SHARE) >> 20
    if cores is None:
        cores = os.cpu_count() or 1
    method = overrides.method or planned_method(rows, current)
    lists = 0
    if method == IVFFLAT:
        lists = overrides.ivfflat_lists or ivfflat_lists(rows)
        needed = ivfflat_build_bytes(rows, lists, dim, bytes_per_value)
    else:
        needed = graph_bytes(rows, dim, bytes_per_value)
    memory_mb = max(MIN_BUILD_MEMORY_MB, min(memory_cap_mb, int(needed * MEMORY_HEADROOM) >> 20))
    workers = 0 if rows < PARALLEL_MIN_ROWS else max(0, min(cores - 1, 7))
    ef = EF_CONSTRUCTION_SMALL if rows <= LARGE_TABLE_ROWS else EF_CONSTRUCTION_LARGE
    return BuildPlan(
        rows=rows,
        method=method,
        memory_mb=overrides.memory_mb or memory_mb,
        workers=overrides.workers if overrides.workers is not None else workers,
        ef_construction=overrides.ef_construction or ef,
        lists=lists,
    )


def needs_retune(plan: BuildPlan, current: PhysicalIndex) -> bool:
    """Whether the index there is now no longer fits the table's plan: another method, or
    IVFFlat lists :data:`RETUNE_FACTOR` times too many or too few."""
    if plan.method != current.method:
        return True
    if plan.method == IVFFLAT and current.lists > 0:
        ratio = plan.lists / current.lists
        return ratio >= RETUNE_FACTOR or ratio <= 1 / RETUNE_FACTOR
    return False


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


def physical_indexes(conn: Conn, index: VectorIndex) -> dict[str, PhysicalIndex]:
    """The indexes of ``index`` that exist, by name (valid or not)."""
    with conn.cursor(row_factory=dict_row) as cur:
        rows = cur.execute(
            QUERIES["physical_indexes"], {"names": index.physical_names()}
        ).fetchall()
    return {
        r["name"]: PhysicalIndex(r["name"], r["method"], bool(r["valid"]), int(r["lists"] or 0))
        for r in rows
    }


def vector_rows(conn: Conn, index: VectorIndex) -> int:
    """The rows ``index`` will hold: those with a vector in its column (the planner's estimate
    when there is one, else a count)."""
    params: dict[str, object] = {"table": index.table, "column": index.column}
    estimate = _one(conn, QUERIES["estimated_vectors"], params)
    if isinstance(estimate, int) and estimate >= 0:
        return estimate
    return int(_one(conn, _count_vectors(index), {}) or 0)


def _count_vectors(index: VectorIndex) -> sql.Composed:
    return compose(
        QUERIES["count_vectors"],
        table=sql.Identifier(index.table),
        column=sql.Identifier(index.column),
    )


def drop_index(conn: Conn, name: str) -> None:
    conn.execute(compose(QUERIES["drop_index"], index=sql.Identifier(name)))


def _create(conn: Conn, index: VectorIndex, plan: BuildPlan, name: str) -> float:
    query = "create_hnsw" if plan.method == HNSW else "create_ivfflat"
    create = compose(
        QUERIES[query],
        index=sql.Identifier(name),
        table=sql.Identifier(index.table),
        # Constants of this package's callers, never user input.
        expr=sql.SQL(index.column_expr),
        opclass=sql.SQL(index.opclass),
        m=sql.Literal(plan.m),
        ef_construction=sql.Literal(plan.ef_construction),
        lists=sql.Literal(plan.lists),
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
    return time.perf_counter() - started


def _finish_rebuild(conn: Conn, index: VectorIndex, built: str) -> str:
    """Make ``built`` (valid) the one index of ``index``: drop every other, then give a rebuild
    its final name. Idempotent, so an interrupted rebuild is finished by the next call."""
    final = built.removesuffix(NEXT_SUFFIX)
    for name in physical_indexes(conn, index):
        if name != built:
            log.info("dropping %s, superseded by %s", name, final)
            drop_index(conn, name)
    if built != final:
        conn.execute(
            compose(
                QUERIES["rename_index"], index=sql.Identifier(built), name=sql.Identifier(final)
            )
        )
    return final


def build_index(
    conn: Conn,
    index: VectorIndex,
    overrides: BuildOverrides = NO_OVERRIDES,
    *,
    retune: bool = True,
) -> BuildReport | None:
    """Make sure ``index`` has one valid index that fits the table, building it CONCURRENTLY
    with settings sized from the table; returns the build made, None when there was nothing
    to do. ``conn`` must be in autocommit mode.

    * An invalid leftover of an interrupted build is dropped; a valid one of an interrupted
      rebuild is finished (the old index dropped, the new one renamed).
    * No valid index: one is built with :func:`plan_build`'s method.
    * ``retune`` and a valid index that no longer fits (:func:`needs_retune`): the planned one
      is built beside it (searches go on using the old one meanwhile), then the old one is
      dropped. Without ``retune`` a misfit is only logged.
    """
    if not conn.autocommit:
        raise ValueError("CREATE INDEX CONCURRENTLY needs an autocommit connection")
    existing = physical_indexes(conn, index)
    for leftover in [p for p in existing.values() if not p.valid]:
        log.warning("dropping invalid index %s (an interrupted build)", leftover.name)
        drop_index(conn, leftover.name)
        del existing[leftover.name]
    rebuilt = [name for name in existing if name.endswith(NEXT_SUFFIX)]
    if rebuilt:
        log.info("finishing the interrupted rebuild of %s", rebuilt[0])
        _finish_rebuild(conn, index, rebuilt[0])
        existing = physical_indexes(conn, index)
    current = next(iter(existing.values()), None)
    rows = vector_rows(conn, index)
    plan = plan_build(
        rows,
        index.dim,
        overrides,
        current=None if current is None else current.method,
        bytes_per_value=index.bytes_per_value,
    )
    if current is not None:
        if not needs_retune(plan, current):
            return None
        if not retune:
            log.warning(
                "index %s (%s%s) does not fit %s rows any more: an indexer's next check"
                " (SHORTLIST_INDEX_RETUNE_INTERVAL) or `shortlist migrate --retune` rebuilds"
                " it as %s",
                current.name,
                current.method,
                f", {current.lists} lists" if current.lists else "",
                f"{rows:,}",
                plan.describe(),
            )
            return None
    final = index.name_for(plan.method)
    name = final if final not in existing else final + NEXT_SUFFIX
    verb = "building" if current is None else f"rebuilding {current.name} as"
    log.info("%s %s index %s on %s, %s", verb, plan.method, final, index.table, plan.describe())
    seconds = _create(conn, index, plan, name)
    _finish_rebuild(conn, index, name)
    size = _index_bytes(conn, final)
    log.info("built %s index %s in %.1f s (%.0f MB)", plan.method, final, seconds, size / 2**20)
    return BuildReport(index, plan, seconds, size, final)


def _index_bytes(conn: Conn, name: str) -> int:
    return int(_one(conn, QUERIES["index_bytes"], {"index": name}) or 0)


def ensure_vector_indexes(
    conn: Conn,
    indexes: Sequence[VectorIndex] = SEARCH_INDEXES,
    overrides: BuildOverrides = NO_OVERRIDES,
    *,
    retune: bool = False,
) -> list[BuildReport]:
    """:func:`build_index` of every index of ``indexes``, then drop what each one replaces;
    returns the builds made. Idempotent: a second call finds nothing to do."""
    built: list[BuildReport] = []
    for index in indexes:
        report = build_index(conn, index, overrides, retune=retune)
        if report is not None:
            built.append(report)
        if index.replaces and index_is_valid(conn, index.replaces) is not None:
            log.info("dropping %s, superseded by %s", index.replaces, index.name)
            drop_index(conn, index.replaces)
    return built


def ensure_space_indexes(
    url: str, indexes: Sequence[VectorIndex], overrides: BuildOverrides = NO_OVERRIDES
) -> None:
    """A model space's vector ``indexes`` (``ModelSpace.indexes``, one per corpus), each built
    CONCURRENTLY if missing, on a connection of its own (sync: run it in a thread)."""
    with connect(url, autocommit=True) as conn:
        ensure_vector_indexes(conn, indexes, overrides)


async def index_report(
    conn: AsyncConn, overrides: BuildOverrides = NO_OVERRIDES
) -> list[dict[str, Any]]:
    """The active model space's vector indexes for ``shortlist status``: method, lists, size,
    and whether each still fits its table under the operator's ``overrides`` (``fits`` false:
    an indexer's next check, or ``shortlist migrate --retune``, rebuilds it)."""
    async with conn.cursor(row_factory=dict_row) as cur:
        await cur.execute(QUERIES["active_space"])
        space = await cur.fetchone()
        indexes = (
            SEARCH_INDEXES if space is None else space_indexes(space["vector_column"], space["dim"])
        )
        out: list[dict[str, Any]] = []
        for index in indexes:
            # As vector_rows: the planner's estimate, or a count before the first ANALYZE.
            params = {"table": index.table, "column": index.column}
            await cur.execute(QUERIES["estimated_vectors"], params)
            row = await cur.fetchone()
            if row is None:
                await cur.execute(_count_vectors(index))
                row = await cur.fetchone()
            rows = int(row["n"] or 0) if row is not None else 0
            await cur.execute(QUERIES["physical_indexes"], {"names": index.physical_names()})
            for r in await cur.fetchall():
                p = PhysicalIndex(r["name"], r["method"], bool(r["valid"]), int(r["lists"] or 0))
                plan = plan_build(rows, index.dim, overrides, current=p.method)
                await cur.execute(QUERIES["index_bytes"], {"index": p.name})
                size = await cur.fetchone()
                out.append(
                    {
                        "table": index.table,
                        "name": p.name,
                        "method": p.method,
                        "lists": p.lists or None,
                        "valid": p.valid,
                        "rows": rows,
                        "bytes": int(size["n"] or 0) if size is not None else 0,
                        "fits": p.valid and not needs_retune(plan, p),
                        "planned": plan.describe(),
                    }
                )
    return out
