-- The embedding indexer's circuit breaker (shortlist.indexer.breaker). A corpus whose embedder
-- fails like a configuration error (it cannot embed even a known-good probe text, or returns
-- vectors of the wrong dimension) is paused here instead of failing its rows: a row present
-- means paused. Every worker's claim reads it, so the pause holds in every process.
CREATE TABLE indexer_pauses (
    corpus    text PRIMARY KEY CHECK (corpus IN ('job_listings', 'candidates')),
    reason    text NOT NULL,
    paused_at timestamptz NOT NULL DEFAULT now(),
    probed_at timestamptz NOT NULL DEFAULT now()
);
