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
most. So every search scans with pgvector's longest list, :data:`EF_SEARCH`.

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
"""``hnsw.ef_search`` of every search: pgvector's upper bound."""
ITERATIVE_SCAN = "relaxed_order"
"""For both methods (IVFFlat has no other iterative mode)."""
IVFFLAT_PROBES = 50
"""``ivfflat.probes`` of every search."""
IVFFLAT_MAX_PROBES = 4 * IVFFLAT_PROBES
"""``ivfflat.max_probes``: how far an iterative scan may read for a filter that keeps few rows
(a fifth of a million-row table; pgvector's default is every list)."""
