"""How far an HNSW search looks: pgvector's ``hnsw.ef_search`` and iterative scan.

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

Both are session settings of every pooled connection (``shortlist.db.pool``).
"""

from __future__ import annotations

EF_SEARCH = 1000
"""``hnsw.ef_search`` of every search: pgvector's upper bound."""
ITERATIVE_SCAN = "relaxed_order"
