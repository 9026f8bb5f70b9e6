-- Plain indexes built CONCURRENTLY by shortlist migrate after the numbered migrations (which
-- run in transactions, where CONCURRENTLY cannot): on a large table a plain CREATE INDEX would
-- block every write for the whole build. Each query's name is its index's name; shortlist.db.
-- migrate builds it when missing and rebuilds it when an interrupted build left it invalid.

-- name: job_listings_created_at_idx
-- The newest listings first: job search ranks only the newest matches of a broad query word
-- (search.sql, text_hits), read through this index instead of every match.
CREATE INDEX CONCURRENTLY job_listings_created_at_idx ON job_listings (created_at DESC)
