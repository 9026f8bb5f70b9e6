"""The meaning path of reverse search (:mod:`.reverse`): the saved queries' vectors of the active
model space in the match queue's memory, scanned exactly for a whole batch of listings.

There are about a tenth as many distinct saved queries as saved searches (100,000 at a million),
so comparing a batch's listings with every one of them is one matrix product (a batch of 64
listings × 100,000 queries × 384 dimensions: ~2.5 GFLOP in BLAS), cheaper than an approximate
range scan of an HNSW index per listing and exact: every query within the radius is found
(bench_alerts measures both). The pairs found are only candidates: PostgreSQL scores each
exactly on the float4 columns (match.sql, insert_matches), so a float32 product here need only
not miss one, hence :data:`CANDIDATE_SLACK`.

Freshness: before each batch the matcher reads the rows written since its last read, having
first taken a snapshot, which it keeps (:attr:`QueryVectors.seen`); ``alert_queries.written_by``
(migration 0048) names the transaction that last wrote a row, so "not seen by that snapshot" is
exact whatever order transactions commit in. A query committed after that read
but before the batch's statement is not in memory yet: the statement takes every query its
snapshot does not see as a candidate of every listing of the batch (few: those written in the
last moments). A change of the active space (the model migration's switch) reloads everything.

Memory: ``4 × dim`` bytes per distinct query (float32; 100,000 × 384: 147 MiB), in one matrix
grown by a quarter when full. float16 would halve it, but numpy has no half-precision BLAS:
the product would be many times slower or need a float32 copy per batch.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from psycopg import sql

from shortlist.db.sql import compose, load_queries
from shortlist.db.types import AsyncConn

QUERIES = load_queries("shortlist.alerts", "query_vectors.sql")

CANDIDATE_SLACK = 1e-4
"""Cosine below the radius still passed on as a candidate: float32 products of normalised
vectors here and pgvector's float4 sums differ by ~1e-6."""
LOAD_CHUNK = 10_000
"""Rows per statement when loading every vector (a new space, or the first batch)."""
SCAN_CHUNK = 65_536
"""Queries per matrix product (bounds the products' memory: batch × chunk floats)."""

Matrix = npt.NDArray[np.float32]


@dataclass(frozen=True)
class Near:
    """The (listing, query) pairs of a batch within the radius, and the snapshot of the
    vectors they were found among."""

    ords: list[int]
    """1-based positions of the listings in the batch."""
    queries: list[int]
    seen: str


def unit_rows(rows: Sequence[Any], dim: int) -> Matrix:
    """pgvector values (``None``: no vector) as float32 rows of length 1 (zero without one, or
    for a zero vector: no cosine reaches a radius then)."""
    out = np.zeros((len(rows), dim), dtype=np.float32)
    for i, v in enumerate(rows):
        if v is not None:
            out[i] = v.to_numpy() if hasattr(v, "to_numpy") else np.asarray(v)
    norms = np.linalg.norm(out, axis=1)
    np.divide(out, norms[:, None], out=out, where=norms[:, None] > 0)
    return out


class QueryVectors:
    """The saved queries' unit vectors in one space's column, refreshed incrementally."""

    def __init__(self) -> None:
        self.column = ""
        self.dim = 0
        self.ids: npt.NDArray[np.int64] = np.empty(0, dtype=np.int64)
        self.vectors: Matrix = np.empty((0, 0), dtype=np.float32)
        self.size = 0
        self.seen: str | None = None
        """The snapshot (``pg_snapshot`` text) the vectors in memory were read by."""
        self._position: dict[int, int] = {}
        self._lock = asyncio.Lock()

    @property
    def nbytes(self) -> int:
        return int(self.vectors.nbytes + self.ids.nbytes)

    def _reset(self, column: str, dim: int) -> None:
        self.column, self.dim = column, dim
        self.ids = np.empty(0, dtype=np.int64)
        self.vectors = np.empty((0, dim), dtype=np.float32)
        self.size = 0
        self.seen = None
        self._position = {}

    def _put(self, ids: Sequence[int], rows: Matrix) -> None:
        """Overwrite the rows of ids already held, append the others."""
        new = [i for i, qid in enumerate(ids) if qid not in self._position]
        if self.size + len(new) > len(self.ids):
            capacity = max(self.size + len(new), len(self.ids) + len(self.ids) // 4 + 1024)
            vectors = np.empty((capacity, self.dim), dtype=np.float32)
            vectors[: self.size] = self.vectors[: self.size]
            grown = np.empty(capacity, dtype=np.int64)
            grown[: self.size] = self.ids[: self.size]
            self.vectors, self.ids = vectors, grown
        for i, qid in enumerate(ids):
            at = self._position.get(qid)
            if at is None:
                at = self._position[qid] = self.size
                self.ids[at] = qid
                self.size += 1
            self.vectors[at] = rows[i]

    async def refresh(self, conn: AsyncConn, column: str, dim: int) -> int:
        """Read what was written since the last read on ``conn``: everything when ``column``
        (the active space's, of ``dim`` dimensions) is not the one held. Returns the rows
        read."""
        async with self._lock:
            if column != self.column or dim != self.dim:
                self._reset(column, dim)
            every, written = (
                compose(QUERIES[name], embedding=sql.Identifier(column))
                for name in ("query_vectors", "query_vectors_written")
            )
            # The snapshot first: the reads after it see at least what it saw, so a row it did
            # not see is read now or at the next refresh (again, if this read had it already).
            cur = await conn.execute(QUERIES["current_snapshot"])
            row = await cur.fetchone()
            assert row is not None
            snapshot = str(row["snapshot"])
            read = 0
            binary = conn.cursor(binary=True)
            if self.seen is None:
                after = 0
                while True:
                    await binary.execute(every, {"after": after, "limit": LOAD_CHUNK})
                    rows = await binary.fetchall()
                    if not rows:
                        break
                    ids = [int(r["id"]) for r in rows]
                    self._put(ids, unit_rows([r["vector"] for r in rows], self.dim))
                    read += len(rows)
                    after = ids[-1]
            else:
                await binary.execute(written, {"seen": self.seen})
                rows = await binary.fetchall()
                if rows:
                    ids = [int(r["id"]) for r in rows]
                    self._put(ids, unit_rows([r["vector"] for r in rows], self.dim))
                    read = len(rows)
            self.seen = snapshot
            return read

    def _near(self, listings: Matrix, min_cosine: float) -> tuple[list[int], list[int]]:
        rows: list[npt.NDArray[np.intp]] = []
        cols: list[npt.NDArray[np.int64]] = []
        for first in range(0, self.size, SCAN_CHUNK):
            chunk = self.vectors[first : min(first + SCAN_CHUNK, self.size)]
            r, c = np.nonzero(listings @ chunk.T >= min_cosine)
            rows.append(r)
            cols.append(self.ids[first + c])
        if not rows:
            return [], []
        return np.concatenate(rows).tolist(), np.concatenate(cols).tolist()

    async def near(self, ords: Sequence[int], listings: Matrix, min_cosine: float) -> Near:
        """The pairs of ``listings`` (unit rows; ``ords`` their positions in the batch) and
        saved queries whose cosine is at least ``min_cosine`` less :data:`CANDIDATE_SLACK`
        (the product in a thread: BLAS lets the event loop run)."""
        async with self._lock:
            if self.seen is None:
                raise RuntimeError("QueryVectors.refresh() was never awaited")
            found, queries = await asyncio.to_thread(
                self._near, listings, min_cosine - CANDIDATE_SLACK
            )
            return Near([int(ords[i]) for i in found], queries, self.seen)
