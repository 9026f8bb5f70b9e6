-- The embedding indexer's circuit breaker (shortlist.indexer.breaker), on indexer_pauses
-- (migration 0012). The claim (queries.sql) skips a corpus that has a row here.

-- name: pause
-- Pause a corpus; returns a row only for the process that paused it (so it logs once).
INSERT INTO indexer_pauses (corpus, reason)
VALUES (%(corpus)s, %(reason)s)
ON CONFLICT (corpus) DO NOTHING
RETURNING corpus

-- name: take_probe
-- The probe of a paused corpus is due: one process takes it per interval.
UPDATE indexer_pauses
   SET probed_at = now()
 WHERE corpus = %(corpus)s
   AND probed_at <= now() - make_interval(secs => %(every)s)
RETURNING reason

-- name: resume
-- Resume corpora, waking every indexer (the claim is what notices).
WITH resumed AS (
    DELETE FROM indexer_pauses
     WHERE corpus = ANY(%(corpora)s::text[])
    RETURNING corpus
)
SELECT corpus, pg_notify(%(channel)s, corpus) FROM resumed ORDER BY corpus

-- name: column_dim
-- The dimension of the active model space's vectors (shortlist.embedding.spaces).
SELECT dim FROM embedding_models WHERE state = 'active'
