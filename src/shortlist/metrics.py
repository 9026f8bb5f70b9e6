"""Prometheus metrics. Queue depths are read from the database at scrape time (see
``shortlist.api.routes.probes``); everything else is counted where it happens."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

QUEUE_CLAIMS = Counter(
    "shortlist_queue_claims_total", "Claim round-trips that returned work", ["queue"]
)
QUEUE_ITEMS = Counter(
    "shortlist_queue_items_total",
    "Items handled by queue workers, by outcome",
    ["queue", "outcome"],
)
QUEUE_BACKOFFS = Counter(
    "shortlist_queue_backoffs_total", "Times a worker backed off after a transient error", ["queue"]
)
SEARCH_READS = Counter(
    "shortlist_search_reads_total",
    "Searches by the server that answered them (shortlist.db.replicas)",
    ["target"],
)
EMBED_LATENCY = Histogram(
    "shortlist_embed_seconds",
    "Latency of one embedding call (a whole batch)",
    ["embedder"],
    buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60),
)
QUERY_CACHE_LOOKUPS = Counter(
    "shortlist_query_cache_lookups_total",
    "Query embeddings looked up in the process's cache (shortlist.embedding.query_cache)",
    ["result"],
)
QUERY_CACHE_HIT_RATIO = Gauge(
    "shortlist_query_cache_hit_ratio",
    "Share of query-embedding lookups answered by the cache since the process started",
)
SEARCH_CACHE_LOOKUPS = Counter(
    "shortlist_search_cache_lookups_total",
    "Job search answers looked up in the process's cache (shortlist.listings.result_cache):"
    " hit, miss, or not_kept (a listing changed while it was computed)",
    ["result"],
)
EMBED_ERRORS = Counter(
    "shortlist_embed_errors_total", "Embedding errors by class", ["embedder", "kind"]
)
EMBED_ROWS = Counter(
    "shortlist_embed_rows_total",
    "Rows the embedding indexer finished, by outcome: embedded, unchanged (embedded text"
    " unchanged, no model call), failed (permanent error), superseded (edited mid-embed),"
    " held_back (handed back untouched: the embedder looks misconfigured, the queue paused)",
    ["corpus", "outcome"],
)
SEARCH_LATENCY = Histogram(
    "shortlist_search_seconds",
    "Server-side search latency",
    ["kind"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5),
)
EXTERNAL_CALLS = Counter(
    "shortlist_external_calls_total",
    "Calls to external providers by outcome",
    ["provider", "operation", "outcome"],
)
EXTERNAL_LATENCY = Histogram(
    "shortlist_external_call_seconds",
    "Latency of external provider calls",
    ["provider", "operation"],
    buckets=(0.05, 0.1, 0.5, 1, 2, 5, 10, 20, 40, 60, 90),
)
BACKFILL_SEARCHES = Counter(
    "shortlist_backfill_searches_total",
    "Candidate searches that started a backfill (too few internal hits)",
)
BACKFILL_REACHED_TARGET = Counter(
    "shortlist_backfill_reached_target_total",
    "Backfilled searches whose results reached their target; hit rate ="
    " this / shortlist_backfill_searches_total",
)
BACKFILL_TIME_TO_FIRST_RESULT = Histogram(
    "shortlist_backfill_time_to_first_result_seconds",
    "Seconds from a backfilled search's creation to its first result from the backfill",
    buckets=(1, 2, 5, 10, 15, 20, 30, 45, 60, 90, 120, 180, 300, 600),
)
WEBHOOK_ATTEMPTS = Counter(
    "shortlist_webhook_attempts_total",
    "Webhook delivery attempts by outcome: delivered (2xx), failed (any other answer, or none;"
    " tried again on the schedule), gave_up (the schedule ran out), gone (410: the endpoint is"
    " disabled), refused (the URL is not to a public address)",
    ["outcome"],
)
