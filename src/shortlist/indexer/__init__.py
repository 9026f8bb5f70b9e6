"""The embedding indexer: one queue per embedded corpus (job listings, candidates).

Producers (API, bulk import, e-mail, backfill) only write rows; the indexer turns them into
vectors. ``corpora`` says what each corpus embeds, ``queue`` claims and embeds.
"""

from shortlist.indexer.corpora import CANDIDATES, CORPORA, LISTINGS, Corpus
from shortlist.indexer.queue import BatchResult, ClaimedRow, EmbeddingQueue

__all__ = [
    "CANDIDATES",
    "CORPORA",
    "LISTINGS",
    "BatchResult",
    "ClaimedRow",
    "Corpus",
    "EmbeddingQueue",
]
