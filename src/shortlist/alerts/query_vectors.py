"""The presearch of reverse search (:mod:`.reverse`) in the match queue's memory: the saved
queries' vectors of the active model space, scanned exactly for a whole batch of listings, and
their title words' trigrams.

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
exact whatever order transactions commit in. A query committed after that read but before the
batch's statement is not in memory yet: the statement takes every query its
snapshot does not see as a candidate of every listing of the batch (few: those written in the
last moments). A change of the active space (the model migration's switch) reloads everything.

The keyword path is here too (:class:`TrigramIndex`): per query the trigrams of its title
words, counted per title from inverted lists.

Of the pairs either path finds, only those whose score can reach the floor are passed on
(:class:`Reach`): the score grows with both inputs, and each has an upper bound here — the
float32 cosine plus :data:`CANDIDATE_SLACK`, and the share of the query's trigrams the whole
title holds (``word_similarity`` counts those of one stretch of it). At a million saved
searches that leaves ~a fifth of the pairs (~3,000 of ~14,000 per batch, ~2,600 of which do
reach it), which PostgreSQL no longer reads and scores (bench/README, alerts).

Memory: ``4 × dim`` bytes per distinct query (float32; 100,000 × 384: 147 MiB) in one matrix
(sized at the first load, grown by a quarter when full), and ~12 bytes per query trigram for
the keyword path (bench_alerts at 100,000 queries: 167 MiB in all; the first load's peak RSS
~330 MB above it, 13 s on the loaded 2-core machine). float16 would halve the matrix, but
numpy has no half-precision BLAS: the product would be many times slower or need a float32
copy per batch.
"""

from __future__ import annotations

import asyncio
import math
from array import array
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
DELTA_MAX = 256
"""Queries added since the keyword path's inverted lists were built that are checked one by one
(a set intersection per title each) before the lists are built again (~0.1 s at 100,000)."""
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


class TrigramIndex:
    """The keyword path: per saved query (by position) the trigrams of its title words
    (pg_trgm's, ``show_trgm``), and which queries a title shares more than ``similarity`` of
    them with. That is necessary for a title similarity above ``similarity``
    (``word_similarity`` counts the query's trigrams found in a stretch of the title, over the
    query's number: at most the share found in the whole title), and tighter than the GIN
    anchor keys (migration 0041), which hold when two trigrams of one group are shared: an
    inverted list per trigram, counted per title with ``np.bincount``. Queries added since the
    lists were built are checked one by one until :data:`DELTA_MAX`, then the lists are built
    again."""

    def __init__(self, similarity: float) -> None:
        self.similarity = similarity
        self.vocabulary: dict[str, int] = {}
        self.size = 0
        self._flat = array("i")
        """Every query's trigram numbers, query after query (``_lengths`` each)."""
        self._lengths = array("i")
        self._need = array("i")
        """Trigrams a title must share with the query: ⌊similarity·n⌋ + 1 (none: n + 1)."""
        self._indexed = 0
        self._postings: npt.NDArray[np.int32] = np.empty(0, dtype=np.int32)
        self._starts: npt.NDArray[np.int64] = np.zeros(1, dtype=np.int64)
        self._need_indexed: npt.NDArray[np.int32] = np.empty(0, dtype=np.int32)
        self._delta: dict[int, frozenset[str]] = {}

    @property
    def nbytes(self) -> int:
        arrays = (self._flat, self._lengths, self._need)
        return sum(a.itemsize * len(a) for a in arrays) + int(
            self._postings.nbytes + self._starts.nbytes + self._need_indexed.nbytes
        )

    def add(self, trigrams: Sequence[str], *, bulk: bool = False) -> int:
        """A new query's trigrams; returns its position. ``bulk``: one of many, :meth:`build`
        follows (not kept to be checked alone meanwhile)."""
        unique = frozenset(trigrams)
        numbers = [self.vocabulary.setdefault(t, len(self.vocabulary)) for t in unique]
        self._flat.extend(numbers)
        self._lengths.append(len(numbers))
        n = len(numbers)
        self._need.append(math.floor(self.similarity * n) + 1 if n else 1)
        position = self.size
        self.size += 1
        if n and not bulk:
            self._delta[position] = unique
        return position

    def build(self, force: bool = False) -> None:
        """The inverted lists again, when the queries checked one by one are too many."""
        if not force and len(self._delta) <= DELTA_MAX:
            return
        flat = np.array(self._flat, dtype=np.int32)
        lengths = np.array(self._lengths, dtype=np.int64)
        positions = np.repeat(np.arange(self.size, dtype=np.int32), lengths)
        order = np.argsort(flat, kind="stable")
        self._postings = positions[order]
        self._starts = np.zeros(len(self.vocabulary) + 1, dtype=np.int64)
        np.cumsum(np.bincount(flat, minlength=len(self.vocabulary)), out=self._starts[1:])
        self._need_indexed = np.array(self._need, dtype=np.int32)
        self._indexed = self.size
        self._delta = {}

    def counts(self, title: Sequence[str]) -> npt.NDArray[np.int64]:
        """Per query (by position), how many of its trigrams ``title``'s (``show_trgm``)
        hold: ``word_similarity`` is at most that over :meth:`lengths`."""
        counts = np.zeros(self.size, dtype=np.int64)
        numbers = [n for t in set(title) if (n := self.vocabulary.get(t)) is not None]
        if numbers and self._indexed:
            hits = np.concatenate(
                [self._postings[self._starts[n] : self._starts[n + 1]] for n in numbers]
            )
            counts[: self._indexed] = np.bincount(hits, minlength=self._indexed)
        if self._delta:
            words = set(title)
            for p, q in self._delta.items():
                counts[p] = len(q & words)
        return counts

    def lengths(self) -> npt.NDArray[np.int64]:
        """Per query (by position), its number of trigrams."""
        return np.array(self._lengths, dtype=np.int64)

    def sharing(
        self, title: Sequence[str], counts: npt.NDArray[np.int64] | None = None
    ) -> npt.NDArray[np.int64]:
        """Positions of the queries ``title``'s trigrams (``show_trgm``) share enough of
        (``counts``: :meth:`counts` of the title, when at hand)."""
        if counts is None:
            counts = self.counts(title)
        found = np.flatnonzero(counts[: self._indexed] >= self._need_indexed)
        if self._delta:
            need = self._need
            more = np.array([p for p in self._delta if counts[p] >= need[p]], dtype=np.int64)
            found = np.concatenate([found, more])
        return found.astype(np.int64)


@dataclass(frozen=True)
class Reach:
    """A floor on a linear score, ``cosine·cos + similarity·sim >= at_least`` (the weights
    positive): a pair whose upper bounds of ``cos`` and ``sim`` cannot reach it is no
    candidate."""

    cosine: float
    similarity: float
    at_least: float


class QueryVectors:
    """The saved queries' unit vectors in one space's column and their title words'
    trigrams (:class:`TrigramIndex`), refreshed incrementally."""

    def __init__(self, *, similarity: float) -> None:
        """``similarity``: the title similarity above which the keyword path answers
        (``reverse.KEYWORD_SIMILARITY``)."""
        self.similarity = similarity
        self.words = TrigramIndex(similarity)
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
        return int(self.vectors.nbytes + self.ids.nbytes) + self.words.nbytes

    def _reset(self, column: str, dim: int) -> None:
        self.column, self.dim = column, dim
        self.ids = np.empty(0, dtype=np.int64)
        self.vectors = np.empty((0, dim), dtype=np.float32)
        self.size = 0
        self.seen = None
        self._position = {}
        self.words = TrigramIndex(self.similarity)

    def _reserve(self, capacity: int) -> None:
        if capacity > len(self.ids):
            vectors = np.empty((capacity, self.dim), dtype=np.float32)
            vectors[: self.size] = self.vectors[: self.size]
            grown = np.empty(capacity, dtype=np.int64)
            grown[: self.size] = self.ids[: self.size]
            self.vectors, self.ids = vectors, grown

    def _put(
        self,
        ids: Sequence[int],
        rows: Matrix,
        trigrams: Sequence[Sequence[str]],
        *,
        bulk: bool = False,
    ) -> None:
        """Overwrite the vectors of ids already held (a query's words do not change), append
        the others (``bulk``: a full load, whose words are indexed at its end)."""
        new = [i for i, qid in enumerate(ids) if qid not in self._position]
        if self.size + len(new) > len(self.ids):
            self._reserve(max(self.size + len(new), len(self.ids) + len(self.ids) // 4 + 1024))
        for i, qid in enumerate(ids):
            at = self._position.get(qid)
            if at is None:
                at = self._position[qid] = self.size
                self.ids[at] = qid
                self.size += 1
                self.words.add(trigrams[i] or (), bulk=bulk)
            self.vectors[at] = rows[i]

    def _put_rows(self, rows: Sequence[Any], *, bulk: bool = False) -> None:
        if rows:
            self._put(
                [int(r["id"]) for r in rows],
                unit_rows([r["vector"] for r in rows], self.dim),
                [r["trigrams"] for r in rows],
                bulk=bulk,
            )

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
                cur = await conn.execute(QUERIES["query_count"])
                row = await cur.fetchone()
                assert row is not None
                # Room for those there are and a few more: no copy of the matrix while loading.
                self._reserve(int(row["n"]) + 1024)
                after = 0
                while True:
                    await binary.execute(every, {"after": after, "limit": LOAD_CHUNK})
                    rows = await binary.fetchall()
                    if not rows:
                        break
                    await asyncio.to_thread(self._put_rows, rows, bulk=True)
                    read += len(rows)
                    after = int(rows[-1]["id"])
                await asyncio.to_thread(self.words.build, True)
            else:
                await binary.execute(written, {"seen": self.seen})
                rows = await binary.fetchall()
                # In a thread, as the scan is: at 100,000 queries a chunk's rows or a rebuild
                # of the trigram lists is ~0.1 s of CPU, which the event loop (the API's, in
                # serve) must not wait for. The lock keeps every other use of them out.
                await asyncio.to_thread(self._put_rows, rows)
                read = len(rows)
                await asyncio.to_thread(self.words.build)
            self.seen = snapshot
            return read

    def _candidates(
        self,
        listings: Matrix,
        titles: Sequence[Sequence[str]],
        min_cosine: float,
        reach: Reach | None,
    ) -> tuple[list[int], list[int]]:
        """(listing row, query id) pairs: within the radius, or sharing enough trigrams; of
        those, with ``reach``, only the pairs whose score can reach it (module docstring)."""
        size = self.size
        if not size:
            return [], []
        rows: list[npt.NDArray[np.int64]] = []
        cols: list[npt.NDArray[np.int64]] = []
        near: list[npt.NDArray[np.float32]] = []
        for first in range(0, size, SCAN_CHUNK):
            chunk = self.vectors[first : min(first + SCAN_CHUNK, size)]
            products = listings @ chunk.T
            r, c = np.nonzero(products >= min_cosine)
            rows.append(r.astype(np.int64))
            cols.append(c.astype(np.int64) + first)
            near.append(products[r, c])
        row, col, cos = np.concatenate(rows), np.concatenate(cols), np.concatenate(near)
        order = np.argsort(row, kind="stable")
        col, cos = col[order], cos[order]
        bounds = np.searchsorted(row[order], np.arange(len(titles) + 1))
        lengths = self.words.lengths() if reach is not None else None
        found_rows: list[npt.NDArray[np.int64]] = []
        found: list[npt.NDArray[np.int64]] = []
        for i, title in enumerate(titles):
            counts = self.words.counts(title)
            within = col[bounds[i] : bounds[i + 1]]
            keyword = np.setdiff1d(self.words.sharing(title, counts), within, assume_unique=True)
            queries = np.concatenate([within, keyword])
            if lengths is not None and reach is not None and len(queries):
                # Upper bounds: the float32 cosine plus the slack, and the share of the query's
                # trigrams the whole title holds (word_similarity takes a stretch of it).
                cosine = np.concatenate(
                    [cos[bounds[i] : bounds[i + 1]], self.vectors[keyword] @ listings[i]]
                ).astype(np.float64)
                n = lengths[queries]
                sim = np.where(n > 0, np.minimum(counts[queries] / np.maximum(n, 1), 1.0), 0.0)
                score = reach.cosine * (cosine + CANDIDATE_SLACK) + reach.similarity * sim
                queries = queries[score >= reach.at_least]
            found_rows.append(np.full(len(queries), i, dtype=np.int64))
            found.append(queries)
        if not found:
            return [], []
        return np.concatenate(found_rows).tolist(), self.ids[np.concatenate(found)].tolist()

    async def candidates(
        self,
        ords: Sequence[int],
        listings: Matrix,
        titles: Sequence[Sequence[str]],
        min_cosine: float,
        reach: Reach | None = None,
    ) -> Near:
        """The pairs of a batch's listings (``listings`` their unit vectors, ``titles`` their
        titles' trigrams, ``ords`` their positions in the batch) and saved queries that may
        match: the meaning path's, whose cosine is at least ``min_cosine`` less
        :data:`CANDIDATE_SLACK`, and the keyword path's (:meth:`TrigramIndex.sharing`); with
        ``reach``, only those whose score's upper bound reaches it. In a thread: BLAS lets the
        event loop run."""
        async with self._lock:
            if self.seen is None:
                raise RuntimeError("QueryVectors.refresh() was never awaited")
            found, queries = await asyncio.to_thread(
                self._candidates, listings, titles, min_cosine - CANDIDATE_SLACK, reach
            )
            return Near([int(ords[i]) for i in found], queries, self.seen)
