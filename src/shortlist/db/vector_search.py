"""How far a vector search looks: pgvector's ``hnsw.ef_search``, ``ivfflat.probes`` and
iterative scans. Which of the two indexes a table has depends on its size
(``shortlist.db.vector_index``); every connection carries the settings of both.

**HNSW.**

An HNSW scan keeps the ``ef_search`` nearest elements it has met while walking the graph and
returns them in order; the true nearest neighbours it never met are what recall loses. The
longer the list, the more it meets, for a cost that grows far more slowly than the list: at a
million listings on the graph ``shortlist.db.vector_index`` builds there (``m`` 16,
``ef_construction`` 64), recall@10 grows from 0.90 at 200 to 0.96 at 1000 while the bare
statement's p50 goes from 24 to 35 ms (``python -m bench.search_settings``; bench/README.md).
A filter (location, salary, work mode, freshness) is applied to the rows the scan returns: one
that keeps 10 % of the rows keeps ~10 % of the list, so filtered searches need the long list
most. So every search scans with pgvector's longest list, :data:`EF_SEARCH`, unless every
HNSW-indexed table is small (:data:`SMALL_GRAPH_ROWS`), where a shorter list already finds what
the longest does.

The iterative scan keeps walking the graph until the LIMIT is filled (up to pgvector's
``hnsw.max_scan_tuples``, 20,000 elements), so a selective filter still fills its page;
``relaxed_order``: rows may come slightly out of order, and every caller re-sorts by the exact
distance. Past ``EF_SEARCH`` rows (deep pages) the iterative scan carries on.

**IVFFlat** (tables above 500k rows). A search compares the query with every list's centre,
then reads every row of the :data:`IVFFLAT_PROBES` nearest lists (about 1,000 rows each) and
returns them in exact order of the indexed distance; the true neighbours it loses are those
filed under a centre further away. On the million-listing benchmark's 400 tuning queries
(bench/README.md), unfiltered recall@10 was 0.974 at 30 probes, 0.989 at 40 and 0.995 at 50,
for a bare statement of 16, 23 and 28 ms; 50 is the first with a margin over 0.98 with the
filters too, and on the 200 held-out queries the benchmark reports it gave 0.992–0.996.
The iterative scan reads further lists, up to :data:`IVFFLAT_MAX_PROBES`, while a filter has
left fewer rows than the LIMIT.

All are session settings of every pooled connection (``shortlist.db.pool``).
"""

from __future__ import annotations

EF_SEARCH = 1000
"""``hnsw.ef_search`` of every search over a large graph: pgvector's upper bound."""
SMALL_GRAPH_ROWS = 100_000
SMALL_GRAPH_EF_SEARCH = 400
"""``hnsw.ef_search`` when no HNSW-indexed table has more than :data:`SMALL_GRAPH_ROWS` rows.

Measured on the search benchmark's 100,000 listings (``python -m bench.search_settings DIR --ef
100,200,400,1000 --tuning``, 2026-12-02; the graph of ``shortlist.db.vector_index`` below 500k
rows: ``m`` 16, ``ef_construction`` 128), recall@10 unfiltered / 10 % filter / 1 % filter:
0.9975 / 0.9942 / 1.0 at 400 against 0.9988 / 0.999 / 1.0 at 1000, for a bare statement p50 of
5.8 ms against 15.0 ms (at 200 the 1 % filter walks the graph and falls to 0.972). The walk at
1000 was about half of PostgreSQL's CPU per HTTP search. Larger tables keep 1000: at a million
rows 400 gave 0.937 (bench/README.md), and between the two nothing was measured."""


def ef_search_for(rows: float, large: int = EF_SEARCH) -> int:
    """``hnsw.ef_search`` for a session whose largest HNSW-indexed table has ``rows`` rows."""
    return min(large, SMALL_GRAPH_EF_SEARCH) if rows <= SMALL_GRAPH_ROWS else large


ITERATIVE_SCAN = "relaxed_order"
"""For both methods (IVFFlat has no other iterative mode)."""
IVFFLAT_PROBES = 50
"""``ivfflat.probes`` of every search."""
IVFFLAT_MAX_PROBES = 4 * IVFFLAT_PROBES
"""``ivfflat.max_probes``: how far an iterative scan may read for a filter that keeps few rows
(a fifth of a million-row table; pgvector's default is every list)."""
