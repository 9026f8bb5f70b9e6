"""How far an HNSW search looks: pgvector's ``hnsw.ef_search`` and iterative-scan settings.

An HNSW scan keeps the ``ef_search`` nearest elements it has met while walking the graph and
returns them in order; the true nearest neighbours it never met are what recall loses. The
longer the list, the more it meets: at a million listings (bench/README.md, "Search settings")
recall@10 grows from 0.90 at pgvector's usual 200 to 0.96 at 1000 on the graph built with
``ef_construction`` 64, and the graph's quality sets the ceiling (``shortlist.db.vector_index``).

**A filter** (location, salary, work mode, freshness) is applied to the rows the scan returns:
a filter that keeps 10 % of the rows keeps ~10 % of the list, so the scan must look ~10× as
far for the same 10 matches. The iterative scan (``relaxed_order``: rows may come slightly out
of order, and every caller re-sorts by exact distance) keeps walking until the LIMIT is
filled, up to ``hnsw.max_scan_tuples`` elements; a longer first list makes the matches it
finds the nearest ones, not merely the first ones.

**A longer LIMIT** (deep pages, the fusion's longer windows) needs a list at least that long,
or the iterative scan has to resume for rows the first pass could have had in order.

So every pooled connection scans with :data:`EF_SEARCH` (set once per session by
``shortlist.db.pool``); a search that needs a longer list (:func:`ef_search_for`) raises it for
its own transaction (``SET LOCAL``). pgvector caps ``ef_search`` at :data:`MAX_EF_SEARCH`;
past it the iterative scan carries on.
"""

from __future__ import annotations

EF_SEARCH = 400
"""Every connection's candidate list: unfiltered first pages."""
FILTERED_EF_SEARCH = 1000
"""A filtered search's candidate list."""
LIMIT_FACTOR = 2
"""A list this many times the LIMIT: the rows past the LIMIT are what keeps its tail exact."""
MAX_EF_SEARCH = 1000
"""pgvector's upper bound of ``hnsw.ef_search``."""
ITERATIVE_SCAN = "relaxed_order"


def ef_search_for(limit: int, *, filtered: bool) -> int:
    """The candidate list of a search for ``limit`` nearest rows, with or without a filter."""
    base = FILTERED_EF_SEARCH if filtered else EF_SEARCH
    return min(MAX_EF_SEARCH, max(base, limit * LIMIT_FACTOR))
