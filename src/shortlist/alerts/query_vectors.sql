-- The saved queries' vectors in the match queue's memory (shortlist.alerts.query_vectors).
-- {embedding}: the active model space's column of alert_queries.

-- name: current_snapshot
-- What the refresh has seen: a row written by a transaction this snapshot does not see is read
-- at the next one (migration 0048).
SELECT pg_current_snapshot()::text AS snapshot

-- name: query_vectors
-- Saved queries' vectors in the space, by id, from after %(after)s.
SELECT id, {embedding} AS vector
  FROM alert_queries
 WHERE id > %(after)s AND {embedding} IS NOT NULL
 ORDER BY id
 LIMIT %(limit)s

-- name: query_vectors_written
-- Saved queries written by a transaction snapshot %(seen)s did not see (migration 0048), with
-- their vector in the space (NULL: none).
SELECT id, {embedding} AS vector
  FROM alert_queries
 WHERE written_by >= pg_snapshot_xmin(%(seen)s::pg_snapshot)
   AND NOT pg_visible_in_snapshot(written_by, %(seen)s::pg_snapshot)
