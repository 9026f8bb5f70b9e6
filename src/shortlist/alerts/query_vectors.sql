-- The saved queries' vectors in the match queue's memory (shortlist.alerts.query_vectors).
-- {embedding}: the active model space's column of alert_queries.

-- name: current_snapshot
-- What the refresh has seen: a row written by a transaction this snapshot does not see is read
-- at the next one (migration 0048).
SELECT pg_current_snapshot()::text AS snapshot

-- name: query_count
-- The saved queries there are (the matrix's size before a full load).
SELECT count(*) AS n FROM alert_queries

-- name: query_vectors
-- Saved queries' vectors in the space (NULL: none) and their title words' trigrams, by id, from
-- after %(after)s.
SELECT q.id, q.{embedding} AS vector, show_trgm(w.title_words) AS trigrams
  FROM alert_queries AS q
  JOIN alert_query_words AS w ON w.query_id = q.id
 WHERE q.id > %(after)s
 ORDER BY q.id
 LIMIT %(limit)s

-- name: query_vectors_written
-- Saved queries written by a transaction snapshot %(seen)s did not see (migration 0048), with
-- their vector in the space (NULL: none) and their title words' trigrams (written with the
-- query, in its transaction: store.sql, insert_query).
SELECT q.id, q.{embedding} AS vector, show_trgm(w.title_words) AS trigrams
  FROM alert_queries AS q
  JOIN alert_query_words AS w ON w.query_id = q.id
 WHERE q.written_by >= pg_snapshot_xmin(%(seen)s::pg_snapshot)
   AND NOT pg_visible_in_snapshot(q.written_by, %(seen)s::pg_snapshot)
